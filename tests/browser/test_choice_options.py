"""Multiple choice cannot be answered by length (issue 22): a guest takes a choice-only quiz the
way a person does, reads the options as shown, ticks every one and checks. The options are of one
form and similar length, and after answering each right option shows its whole key point.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import WIDTHS, page_at, screenshot

pytestmark = pytest.mark.browser


@pytest.mark.parametrize("width", list(WIDTHS))
def test_choice_options_are_short_forms_and_the_answer_shows_each_point_in_full(  # type: ignore[no-untyped-def]
    browser, live_server: str, width: str
) -> None:
    context, page = page_at(browser, live_server, width)
    page.goto("/quiz")
    form = page.get_by_role("form", name="Start a quiz")
    form.get_by_label("MHA, MQA and GQA").check()
    form.get_by_label("Recall").uncheck()
    form.get_by_label("Numeric problems").uncheck()
    form.get_by_label("Cards").fill("3")
    form.get_by_role("button", name="Start the quiz").click()
    finished = page.get_by_role("heading", name="Quiz finished")
    asked = 0
    while not finished.count():
        expect(page.locator(".quiz-item")).to_have_attribute("data-kind", "choice")
        labels = page.locator(".choices li label")
        texts = [" ".join(t.split()) for t in labels.all_inner_texts()]
        assert len(texts) >= 3, texts
        # One form: no option is a paragraph beside one-liners, none keeps Markdown's marks.
        assert max(map(len, texts)) <= 160 and max(map(len, texts)) <= 4 * min(map(len, texts)), texts
        assert not any("**" in t for t in texts), texts
        for box in page.locator(".choices input[type=checkbox]").all():
            box.check()
        page.get_by_role("button", name="Check my answer").click()
        right = page.locator(".choices.answered li.opt-right")
        # The answered page is a new load: wait for it before counting (a bare count() races it).
        expect(right.first).to_be_visible()
        for i in range(right.count()):
            option = right.nth(i)
            full = option.locator(".key-point-in-full")
            expect(full).to_be_visible()
            shown = " ".join(option.inner_text().split())
            assert len(" ".join(full.inner_text().split())) >= 20, shown
        # Nothing drawn past the phone's edge.
        assert page.evaluate("document.scrollingElement.scrollWidth <= window.innerWidth")
        screenshot(page, f"quiz-choice-short-forms-{width}")
        asked += 1
        page.locator("#next").click()
    assert asked >= 3
    expect(page.locator("body")).not_to_contain_text(re.compile("Internal Server Error"))
    context.close()

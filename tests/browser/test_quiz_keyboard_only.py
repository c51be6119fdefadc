"""A whole quiz from the keyboard alone, counting the keys: recall, multiple choice and numeric
questions, repeats included, each in under five key presses (it took 315 for 14 questions when
focus started on the page body and Tab had to walk the header first). At both widths.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import WIDTHS, page_at, screenshot

pytestmark = pytest.mark.browser

KEYS_PER_QUESTION = 5


def start_mixed_quiz(page, cards: int) -> None:  # type: ignore[no-untyped-def]
    page.goto("/quiz")
    form = page.get_by_role("form", name="Start a quiz")
    form.get_by_label("KV-cache memory arithmetic").check()  # a topic with all three kinds
    form.get_by_label("Cards").fill(str(cards))
    form.get_by_role("button", name="Start the quiz").click()


@pytest.mark.parametrize("width", list(WIDTHS))
def test_a_whole_quiz_from_the_keyboard_in_few_keys(browser, live_server: str, width: str) -> None:  # type: ignore[no-untyped-def]
    context, page = page_at(browser, live_server, width)
    start_mixed_quiz(page, 6)
    kinds: set[str] = set()
    asked = 0
    while True:
        item = page.locator(".quiz-item")
        expect(item).to_have_attribute("data-state", "open")
        kind = item.get_attribute("data-kind")
        assert kind is not None
        kinds.add(kind)
        asked += 1
        before = page.url
        presses = 0

        def press(key: str) -> None:
            nonlocal presses
            presses += 1
            page.keyboard.press(key)

        if kind == "recall":
            expect(page.locator("#reveal")).to_be_focused()
            press("Space")  # reveal
            expect(page.locator("#strong-answer")).to_be_focused()
            press("3")  # Good: a rated recall card opens the next question (or the results)
            expect(page.locator(".flash")).to_contain_text("Good, due again in")
            finished = page.get_by_role("heading", name="Quiz finished").count() > 0
        else:
            if kind == "choice":
                expect(page.locator(".choice-form input[name=picked]").first).to_be_focused()
                press("Space")  # tick the first option
                press("Enter")  # check
            else:
                expect(page.get_by_label("Your answer")).to_be_focused()
                press("1")
                press("Enter")
            expect(page.locator("#rated")).to_be_visible()
            expect(page.locator("#next")).to_be_focused()
            finished = page.locator("#next").inner_text() != "Next question"
            press("Enter")
            page.wait_for_url(lambda url, before=before: url != before)
        assert presses < KEYS_PER_QUESTION, (kind, presses)
        if finished:
            break
    expect(page.get_by_role("heading", name="Quiz finished")).to_be_visible()
    assert asked >= 6 and kinds == {"recall", "choice", "numeric"}, (asked, kinds)
    expect(page.locator(".quiz-results")).to_contain_text(re.compile(r"\d"))
    screenshot(page, f"quiz-keyboard-only-{width}")
    context.close()

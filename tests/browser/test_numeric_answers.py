"""A numeric quiz answer that does not read as a number in the question's units gets a message and a
retry (never a rating, never the solution); a unit typed into the number box is read. At a desktop
width and at a phone's; screenshots in test-artifacts/.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import WIDTHS, screenshot
from tests.browser.numeric_quiz import (
    answer_numeric_wrong_and_go_on,
    question_total,
    start_numeric_quiz,
)

pytestmark = pytest.mark.browser


@pytest.mark.parametrize("width", list(WIDTHS))
def test_unreadable_numeric_answer_is_asked_again(browser, live_server: str, width: str) -> None:  # type: ignore[no-untyped-def]
    context, page = start_numeric_quiz(
        browser, live_server, width, topic="KV-cache memory arithmetic", cards=1
    )
    expect(page.locator(".quiz-item")).to_have_attribute("data-kind", "numeric")
    box = page.get_by_label("Your answer")

    # Words around the number: a message, the text kept, nothing rated or revealed.
    box.fill("about 3 gigs")
    page.get_by_role("button", name="Check", exact=True).click()
    expect(page.locator("#numeric-error")).to_contain_text("try again")
    expect(page.get_by_label("Your answer")).to_have_value("about 3 gigs")
    expect(page.locator("#rated")).to_have_count(0)
    expect(page.locator(".worked-solution")).to_have_count(0)
    screenshot(page, f"quiz-numeric-unreadable-{width}")

    # A decimal comma could be 0.7 or 70 (or, with a point too, anything): asked again, not guessed.
    for typed, said in (("0,70", "thousands separator"), ("1.234,5", "thousands separator"),
                        ("-5", "never negative")):  # fmt: skip
        page.get_by_label("Your answer").fill(typed)
        page.get_by_role("button", name="Check", exact=True).click()
        expect(page.locator("#numeric-error")).to_contain_text(said)
        expect(page.get_by_label("Your answer")).to_have_value(typed)
        expect(page.locator("#rated")).to_have_count(0)
        expect(page.locator(".worked-solution")).to_have_count(0)

    menu = page.locator("select[name=unit]")
    if menu.count():
        # A unit typed in the box beats the menu's first choice: it is read and graded.
        options = menu.locator("option").all_inner_texts()
        typed_unit = options[-1]
        assert typed_unit != menu.input_value()
        page.get_by_label("Your answer").fill(f"0.5 {typed_unit}")
        page.get_by_role("button", name="Check", exact=True).click()
        expect(page.locator("#numeric-result")).to_contain_text(
            re.compile(f"Right|you gave 0.5 {typed_unit}")
        )
    else:
        # A count: a size is not an answer to it.
        page.get_by_label("Your answer").fill("3 GiB")
        page.get_by_role("button", name="Check", exact=True).click()
        expect(page.locator("#numeric-error")).to_contain_text("count")
        expect(page.locator("#rated")).to_have_count(0)
        page.get_by_label("Your answer").fill("3")
        page.get_by_role("button", name="Check", exact=True).click()
        expect(page.locator("#numeric-result")).to_be_visible()
    expect(page.locator("#rated")).to_contain_text("due again in")
    screenshot(page, f"quiz-numeric-graded-{width}")
    context.close()


@pytest.mark.parametrize("width", list(WIDTHS))
def test_a_numeric_only_quiz_repeats_no_problem_and_says_when_short(
    browser, live_server: str, width: str
) -> None:  # type: ignore[no-untyped-def]
    context, page = start_numeric_quiz(browser, live_server, width, topic="MHA, MQA and GQA", cards=20)
    total = question_total(page)
    if total < 20:
        expect(page.locator(".flash")).to_contain_text(f"This quiz has {total} question")
        screenshot(page, f"quiz-numeric-short-{width}")
    # Every answer is wrong, so a card comes back as a new problem while one is left: the quiz
    # grows, and still no problem is asked twice.
    prompts = []
    going_on = True
    while going_on:
        n = len(prompts) + 1
        expect(page.locator(".quiz-progress")).to_have_text(re.compile(rf"^Question {n} of \d+$"))
        expect(page.locator(".quiz-item")).to_have_attribute("data-kind", "numeric")
        if n > total:
            expect(page.locator("#repeat-badge")).to_have_text("asked again, afresh: you missed it")
        prompts.append(page.locator("section.question").inner_text())
        going_on = answer_numeric_wrong_and_go_on(page)
    expect(page.get_by_role("heading", name="Quiz finished")).to_be_visible()
    assert len(prompts) >= total
    assert len(prompts) == len(set(prompts)), prompts
    context.close()

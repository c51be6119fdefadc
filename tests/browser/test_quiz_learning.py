"""Anki's habits in the quiz, clicked through at a desktop width and at a phone's (390x844):
a card rated Again comes back at the end of the same quiz; Undo after a rating brings the rating
buttons back and leaves the due counts as they were. Screenshots saved."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import WIDTHS, assert_no_sideways_scroll, page_at, screenshot, watch_csp

pytestmark = pytest.mark.browser

TOPIC = "Rotary position embeddings"


def start_quiz(page, cards: int, unticked: tuple[str, ...]) -> None:  # type: ignore[no-untyped-def]
    """The quiz form on TOPIC with these kinds unticked, as a person fills it in."""
    page.goto("/quiz")
    form = page.get_by_role("form", name="Start a quiz")
    form.get_by_label(TOPIC).check()
    for other in unticked:
        form.get_by_label(other).uncheck()
    form.get_by_label("Cards").fill(str(cards))
    form.get_by_role("button", name="Start the quiz").click()


def start_recall_quiz(page, cards: int) -> None:  # type: ignore[no-untyped-def]
    start_quiz(page, cards, ("Multiple choice", "Numeric problems"))


def reveal_and_rate(page, rating: str) -> str:  # type: ignore[no-untyped-def]
    """Reveal the strong answer, rate it; the card's title."""
    title = page.locator(".quiz-item h1").inner_text()
    page.get_by_role("button", name="Reveal the strong answer").click()
    page.locator(f".rating-buttons button[value='{rating}']").click()
    return title


@pytest.mark.parametrize("width", list(WIDTHS))
def test_an_again_card_comes_back_in_the_same_quiz(browser, live_server: str, width: str) -> None:  # type: ignore[no-untyped-def]
    context, page = page_at(browser, live_server, width)
    violations = watch_csp(page)
    start_recall_quiz(page, 2)
    expect(page.locator(".quiz-progress")).to_have_text("Question 1 of 2")
    expect(page.locator(".rate-form, form[action$='/answer']").first).to_be_visible()
    page.get_by_role("button", name="Reveal the strong answer").click()
    expect(page.locator(".rate-form")).to_contain_text("Again brings the card back at the end of this quiz")
    page.locator(".rating-buttons button[value='again']").click()
    first = page.locator(".flash").inner_text().split(":")[0]
    expect(page.locator(".flash")).to_contain_text("Again, due again in")
    # The quiz grew by one: the Again card waits at its end.
    expect(page.locator(".quiz-progress")).to_have_text("Question 2 of 3")
    reveal_and_rate(page, "good")
    expect(page.locator(".quiz-progress")).to_have_text("Question 3 of 3")
    expect(page.locator(".quiz-item h1")).to_have_text(first)
    expect(page.locator("#repeat-badge")).to_be_visible()
    assert_no_sideways_scroll(page, "a recall repeat")
    screenshot(page, f"quiz-again-comes-back-{width}")
    reveal_and_rate(page, "good")
    expect(page.get_by_role("heading", name="Quiz finished")).to_be_visible()
    expect(page.locator(".quiz-results tbody tr")).to_have_count(3)
    expect(page.locator(".quiz-results")).to_contain_text("(asked again)")
    assert_no_sideways_scroll(page, "the results with a repeat")
    screenshot(page, f"quiz-again-summary-{width}")
    context.close()
    assert violations == []


@pytest.mark.parametrize("width", list(WIDTHS))
def test_undo_brings_the_rating_buttons_back_and_the_due_count_is_unchanged(  # type: ignore[no-untyped-def]
    browser, live_server: str, width: str
) -> None:
    context, page = page_at(browser, live_server, width)
    violations = watch_csp(page)
    page.goto("/progress")
    due_today = page.locator("#stat-due-today").inner_text()
    due_now = page.locator("#stat-due-now").inner_text()

    start_recall_quiz(page, 2)
    title = reveal_and_rate(page, "good")
    expect(page.locator(".quiz-progress")).to_have_text("Question 2 of 2")
    undo = page.locator("#undo-form")
    expect(undo).to_contain_text(title)
    expect(undo).to_contain_text("Good")
    screenshot(page, f"quiz-undo-offered-{width}")
    page.get_by_role("button", name="Undo that rating").click()

    expect(page.locator(".flash")).to_contain_text("Rating undone")
    expect(page.locator(".quiz-progress")).to_have_text("Question 1 of 2")
    expect(page.locator(".quiz-item h1")).to_have_text(title)
    expect(page.locator(".quiz-item")).to_have_attribute("data-state", "revealed")
    for name in ("Again", "Hard", "Good", "Easy"):
        expect(page.locator(".rating-buttons").get_by_role("button", name=name)).to_be_visible()
    expect(page.locator("#undo")).to_have_count(0)  # nothing left to undo
    screenshot(page, f"quiz-undo-done-{width}")

    page.goto("/progress")
    expect(page.locator("#stat-due-today")).to_have_text(due_today)
    expect(page.locator("#stat-due-now")).to_have_text(due_now)
    expect(page.locator("#stat-reviews")).to_have_text("0")

    # From the keyboard, as in Anki: rate with 3, then Ctrl+Z takes it back.
    page.go_back()
    page.reload()
    page.keyboard.press("3")
    expect(page.locator(".quiz-progress")).to_have_text("Question 2 of 2")
    expect(page.locator("#undo kbd")).to_have_text("Ctrl+Z")
    page.keyboard.press("Control+z")
    expect(page.locator(".flash")).to_contain_text("Rating undone")
    expect(page.locator(".quiz-item")).to_have_attribute("data-state", "revealed")
    context.close()
    assert violations == []


def option_texts(page) -> list[str]:  # type: ignore[no-untyped-def]
    return sorted(page.locator(".choices li").all_inner_texts())


@pytest.mark.parametrize("width", list(WIDTHS))
def test_a_missed_choice_comes_back_with_new_options_and_undo_takes_it_away(  # type: ignore[no-untyped-def]
    browser, live_server: str, width: str
) -> None:
    context, page = page_at(browser, live_server, width)
    violations = watch_csp(page)
    start_quiz(page, 1, ("Recall", "Numeric problems"))
    expect(page.locator(".quiz-progress")).to_have_text("Question 1 of 1")
    title = page.locator(".quiz-item h1").inner_text()
    first_options = option_texts(page)

    # Every box ticked: the wrong ones with them, so a miss, rated Again.
    for box in page.locator(".choices input[type=checkbox]").all():
        box.check()
    page.get_by_role("button", name="Check my answer").click()
    expect(page.locator("#rated")).to_contain_text("Again")
    expect(page.locator("#repeat-queued")).to_have_text(
        "It comes back as question 2, at the end of this quiz, with options drawn anew."
    )
    expect(page.locator(".quiz-progress")).to_have_text("Question 1 of 2")
    assert_no_sideways_scroll(page, "a missed choice")
    screenshot(page, f"quiz-choice-missed-{width}")

    # Undo takes the miss back, and its repeat with it.
    page.get_by_role("button", name="Undo that rating").click()
    expect(page.locator(".flash")).to_contain_text("Rating undone")
    expect(page.locator(".quiz-progress")).to_have_text("Question 1 of 1")
    expect(page.locator(".quiz-item")).to_have_attribute("data-state", "open")

    # Missed again, then on: the same card, asked with options drawn anew.
    for box in page.locator(".choices input[type=checkbox]").all():
        box.check()
    page.get_by_role("button", name="Check my answer").click()
    page.locator("#next").click()
    expect(page.locator(".quiz-progress")).to_have_text("Question 2 of 2")
    expect(page.locator(".quiz-item h1")).to_have_text(title)
    expect(page.locator("#repeat-badge")).to_have_text("asked again, afresh: you missed it")
    assert option_texts(page) != first_options
    assert_no_sideways_scroll(page, "a choice asked again, afresh")
    screenshot(page, f"quiz-choice-asked-again-{width}")
    page.locator(".choices input[type=checkbox]").first.check()
    page.get_by_role("button", name="Check my answer").click()
    if page.locator("#next").inner_text() == "Next question":  # missed once more: a third asking
        page.locator("#next").click()
        expect(page.locator(".quiz-progress")).to_have_text("Question 3 of 3")
    context.close()
    assert violations == []

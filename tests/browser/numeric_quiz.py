"""Starting a numeric-only quiz on one topic the way a person does: the quiz page's form, ticked."""

from __future__ import annotations

from tests.browser.conftest import page_at


def start_numeric_quiz(browser, live_server: str, width: str, *, topic: str, cards: int):  # type: ignore[no-untyped-def]
    """A new browser context at this width, on the first question of a numeric-only quiz on
    `topic` (the topic's title as the form labels it) asking for `cards` cards: (context, page)."""
    context, page = page_at(browser, live_server, width)
    page.goto("/quiz")
    form = page.get_by_role("form", name="Start a quiz")
    form.get_by_label(topic).check()
    form.get_by_label("Recall").uncheck()
    form.get_by_label("Multiple choice").uncheck()
    form.get_by_label("Cards").fill(str(cards))
    form.get_by_role("button", name="Start the quiz").click()
    return context, page


def question_total(page) -> int:  # type: ignore[no-untyped-def]
    """N in "Question n of N": it grows while the quiz runs, as each miss queues its repeat."""
    return int(page.locator(".quiz-progress").inner_text().rsplit(" ", 1)[1])


def answer_numeric_wrong_and_go_on(page) -> bool:  # type: ignore[no-untyped-def]
    """Answer "1" (never right here), then follow the link on: True while questions remain."""
    page.get_by_label("Your answer").fill("1")
    page.get_by_role("button", name="Check", exact=True).click()
    going_on = page.locator("#next").inner_text() == "Next question"
    page.locator("#next").click()
    return bool(going_on)

"""The quiz from the keyboard, as an Anki user drives it: Space reveals, focus lands on the strong
answer, ticking a key point then 1-4 rates (the keys are shown on the buttons); an empty
multiple-choice submission asks first. At a desktop width and at a phone's; screenshots saved.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import WIDTHS, page_at, screenshot

pytestmark = pytest.mark.browser

TOPIC = "Why a decode step needs no mask"


def start(page, kind: str) -> None:  # type: ignore[no-untyped-def]
    page.goto("/quiz")
    form = page.get_by_role("form", name="Start a quiz")
    form.get_by_label(TOPIC).check()
    for other in ("Recall", "Multiple choice", "Numeric problems"):
        if other != kind:
            form.get_by_label(other).uncheck()
    form.get_by_label("Cards").fill("1")
    form.get_by_role("button", name="Start the quiz").click()


@pytest.mark.parametrize("width", list(WIDTHS))
def test_the_quiz_from_the_keyboard(browser, live_server: str, width: str) -> None:  # type: ignore[no-untyped-def]
    context, page = page_at(browser, live_server, width)

    start(page, "Recall")
    expect(page.locator(".quiz-item")).to_have_attribute("data-kind", "recall")
    expect(page.locator("#reveal")).to_be_focused()  # the page's script is running: keys are live
    page.keyboard.press("Space")
    expect(page.locator(".quiz-item")).to_have_attribute("data-state", "revealed")
    expect(page.locator("#strong-answer")).to_be_focused()
    for n, name in enumerate(["Again", "Hard", "Good", "Easy"], start=1):
        expect(page.locator(f".rating-buttons button[data-key='{n}']")).to_contain_text(name)
        expect(page.locator(f".rating-buttons button[data-key='{n}'] kbd")).to_have_text(str(n))
    # Easy on a new card is fuzzed over days: the button says the day this card's review will pick.
    expect(page.locator(".rating-buttons button[data-key='4'] small")).to_have_text(re.compile(r"^\d+ days$"))
    screenshot(page, f"quiz-keys-revealed-{width}")
    # Tick a key point (focus is now on the checkbox), then rate Good with the key 3.
    page.locator(".tick-list input[type=checkbox]").first.check()
    page.keyboard.press("3")
    expect(page.locator(".flash")).to_contain_text("Good, due again in")

    start(page, "Multiple choice")
    expect(page.locator(".quiz-item")).to_have_attribute("data-kind", "choice")
    asked: list[str] = []

    def decline(dialog) -> None:  # type: ignore[no-untyped-def]
        asked.append(dialog.message)
        dialog.dismiss()

    page.once("dialog", decline)
    page.get_by_role("button", name="Check my answer").click()
    assert asked and "No option is ticked" in asked[0]
    expect(page.locator(".quiz-item")).to_have_attribute("data-state", "open")  # nothing sent
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Check my answer").click()
    expect(page.locator("#rated")).to_contain_text("Again")
    screenshot(page, f"quiz-keys-empty-choice-{width}")
    context.close()

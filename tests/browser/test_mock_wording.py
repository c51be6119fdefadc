"""What a mock interview says as a person goes through it (issue 22, polish): an answer that covered
every key point is not "dug into" but asked a harder question; questions never reached after the
candidate ended the interview say so (not that the clock stopped); the shared report speaks of the
candidate's answers to its reader, not of "your answer". At a desktop width and at a phone's.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from app.config import ROOT
from app.content.loader import parse_card
from app.services.key_point_matcher import plain
from tests.browser.conftest import WIDTHS, page_at

pytestmark = pytest.mark.browser

TOPIC = "Why a decode step needs no mask"  # spoken questions only
CARDS = [
    card
    for path in sorted((ROOT / "questions" / "cards" / "decode-no-mask").glob("*.md"))
    if (card := parse_card(path.read_text(), path.name)[0]) is not None
]


def every_key_point(question: str) -> str:
    """The key points of the card asked, as one answer: it covers them all."""
    card = next(c for c in CARDS if plain(c.question)[:60] in plain(question))
    return "\n".join(plain(point) for point in card.key_points)


@pytest.mark.parametrize("width", list(WIDTHS))
def test_a_full_answer_an_early_end_and_the_shared_report(browser, live_server: str, width: str) -> None:  # type: ignore[no-untyped-def]
    context, page = page_at(browser, live_server, width)
    page.goto("/mock")
    page.get_by_label("Custom", exact=True).check()
    page.get_by_label("Custom length in minutes").fill("12")
    page.get_by_label(TOPIC).check()
    page.get_by_label("Include a coding problem").uncheck()
    page.get_by_role("button", name="Start the interview").click()
    expect(page.locator(".mock-progress")).to_contain_text("Question 1 of 3")

    page.get_by_label("Your answer").fill(every_key_point(page.locator("#question-text").inner_text()))
    page.get_by_role("button", name="Answer", exact=True).click()
    speaker = page.locator("#follow-up-speaker")
    expect(speaker).to_have_text("Interviewer: that covered every key point. A harder one:")
    page.get_by_label("Your answer").fill("A harder answer")
    page.get_by_role("button", name="Answer", exact=True).click()
    expect(page.locator(".mock-progress")).to_contain_text("Question 2 of 3")

    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="End the interview").click()
    page.get_by_role("button", name="See my report").click()
    expect(page.get_by_role("heading", name="Your report")).to_be_visible()
    expect(page.locator("#q3 .not-reached")).to_have_text("Not reached: the interview was ended early.")
    expect(page.locator("#q1")).to_contain_text("Your answer")

    page.get_by_role("button", name="Create a read-only link").click()
    link = page.locator("#share-url").input_value()
    visitor = browser.new_context(viewport=page.viewport_size).new_page()
    visitor.goto(link)
    expect(visitor.get_by_role("heading", name="A mock interview report")).to_be_visible()
    expect(visitor.locator("#q1")).to_contain_text("The candidate's answer")
    expect(visitor.locator("#q1")).not_to_contain_text("Your answer")
    visitor.context.close()
    context.close()

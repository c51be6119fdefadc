"""The mock interviewer's adaptive path and the consent to schedule, clicked through in Chromium: an
answer that misses every key point gets the follow-up that probes the most important one, and the
report says it was asked for that point; on the score page one question is ticked "Schedule this
card for review" and the other left unticked, and the progress page's review history shows only
the ticked card.

Which follow-up probes which key point is the card's own data (questions/cards/decode-no-mask/),
read here from the files as check-content reads them.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from app.config import ROOT
from app.content.loader import parse_card
from app.content.schema import Card
from tests.browser.conftest import page_at, screenshot, watch_csp

pytestmark = pytest.mark.browser

TOPIC = "Why a decode step needs no mask"  # three cards, no numeric problems
CARDS = ROOT / "questions" / "cards" / "decode-no-mask"
NOTHING = "No idea, sorry."  # shares no word with any key point, states no figure


def bank() -> list[Card]:
    cards = [
        parse_card(p.read_text(), str(p.relative_to(ROOT / "questions")))[0]
        for p in sorted(CARDS.glob("*.md"))
    ]
    assert all(cards)
    return [c for c in cards if c is not None]


def asked(question_text: str) -> Card:
    """The card whose question the page shows (its first words: the page renders the Markdown)."""
    start = re.sub(r"[*`_]", "", question_text).split()[:8]
    found = [c for c in bank() if re.sub(r"[*`_]", "", c.question).split()[:8] == start]
    assert len(found) == 1, question_text
    return found[0]


def probe_for_nothing(card: Card) -> tuple[int, str]:
    """The key point an answer covering none of them is probed on, and the follow-up's question:
    the first key point some follow-up probes, a `same` follow-up before a `harder` one."""
    for i in range(len(card.key_points)):
        found = [f for f in card.follow_ups if i in f.probes]
        if found:
            same = [f for f in found if f.difficulty == "same"]
            return i, (same or found)[0].question
    raise AssertionError(f"no follow-up of {card.id} probes a key point")


def test_a_missed_point_is_probed_and_only_the_ticked_card_is_scheduled(browser, live_server: str) -> None:  # type: ignore[no-untyped-def]
    context, page = page_at(browser, live_server, "desktop")
    violations = watch_csp(page)
    page.goto("/")
    page.get_by_role("link", name="Sign up").click()
    page.get_by_label("Email").fill("adaptive-mock@example.com")
    page.get_by_label("Password", exact=True).fill("correct horse battery")
    page.get_by_label("Password again").fill("correct horse battery")
    page.get_by_role("button", name="Create my account").click()
    expect(page.locator(".flash")).to_contain_text("Your account is ready")

    # Two questions on one topic (4 minutes a question), no coding problem.
    page.get_by_role("link", name="Mock").first.click()
    page.get_by_label("Custom", exact=True).check()
    page.get_by_label("Custom length in minutes").fill("8")
    page.get_by_label(TOPIC).check()
    page.get_by_label("Include a coding problem").uncheck()
    page.get_by_role("button", name="Start the interview").click()
    expect(page.locator(".mock-progress")).to_contain_text("Question 1 of 2")

    # The first question is spoken; an answer that covers nothing is probed on the first key point.
    question = page.locator("#question-text")
    expect(question).to_be_visible()
    first = asked(question.inner_text())
    point, follow_up = probe_for_nothing(first)
    page.get_by_label("Your answer").fill(NOTHING)
    page.get_by_role("button", name="Answer", exact=True).click()
    expect(page.get_by_text("Interviewer, digging deeper:")).to_be_visible()
    expect(page.locator("#question-text")).to_contain_text(re.sub(r"[*`_]", "", follow_up)[:60])
    screenshot(page, "mock-adaptive-probe")
    page.get_by_label("Your answer").fill("I would have to look it up.")
    page.get_by_role("button", name="Answer", exact=True).click()

    # The second question, whatever kind it is, then its follow-up: the last answer stops the clock.
    expect(page.locator(".mock-progress")).to_contain_text("Question 2 of 2")
    second = asked(page.locator("#question-text").inner_text())
    assert second.id != first.id
    options = page.locator("input[name='picked']")  # the page is whole once its question shows
    if options.count():
        options.first.check()
    else:
        page.get_by_label("Your answer").fill(NOTHING)
    page.get_by_role("button", name="Answer", exact=True).click()
    expect(page.get_by_text(re.compile("Interviewer(, digging deeper|: that covered)"))).to_be_visible()
    page.get_by_label("Your answer").fill("Not sure.")
    page.get_by_role("button", name="Answer", exact=True).click()

    # Scoring: both review boxes start unticked; only the first question's is ticked.
    expect(page.get_by_role("heading", name="Score your answers")).to_be_visible()
    boxes = page.get_by_label("Schedule this card for review")
    expect(boxes.first).to_be_visible()
    expect(boxes).to_have_count(2)
    expect(boxes.nth(0)).not_to_be_checked()
    expect(boxes.nth(1)).not_to_be_checked()
    page.locator(".mock-score-item[data-position='0']").get_by_label("Schedule this card for review").check()
    screenshot(page, "mock-adaptive-score")
    page.get_by_role("button", name="See my report").click()

    # The report says why the follow-up was asked, naming the point the answer missed.
    expect(page.get_by_role("heading", name="Your report")).to_be_visible()
    reason = page.locator("#q1 .follow-up-reason")
    expect(reason).to_contain_text(f"did not mention key point {point + 1}")
    expect(page.locator("#review")).to_contain_text("not scheduled for review")

    # What the user sees of their schedule: the ticked card was reviewed, the other was not.
    page.goto("/progress")
    history = page.locator("table.history")
    expect(history).to_be_visible()
    expect(history.locator(f"a[href='/cards/{first.id}']")).to_have_count(1)
    expect(history.locator(f"a[href='/cards/{second.id}']")).to_have_count(0)
    expect(history.locator("tbody tr")).to_have_count(1)
    context.close()
    assert violations == []

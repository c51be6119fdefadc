"""Suggested key points in Chromium, at a desktop width and at a phone's: a typed quiz recall answer
comes back with the points it covers pre-ticked and marked "suggested"; the user changes a tick and
rates. In a mock interview the score page pre-ticks the same way, the user confirms, and the report
says which points the matcher suggested and which the user confirmed. Screenshots saved.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from app.services.key_point_matcher import plain
from tests.browser.conftest import WIDTHS, page_at, screenshot, watch_csp
from tests.services.factories import catalog

pytestmark = pytest.mark.browser

TOPIC = "Why a decode step needs no mask"  # recall cards, and no numeric problems in the mock


def key_points_titled(title: str) -> list[str]:
    card = next(c for c in catalog().bank.cards if c.title == title)
    return [plain(p) for p in card.key_points]


@pytest.mark.parametrize("width", list(WIDTHS))
def test_a_quiz_answer_pre_ticks_what_it_covers(browser, live_server: str, width: str) -> None:  # type: ignore[no-untyped-def]
    context, page = page_at(browser, live_server, width, timeout_ms=20_000)
    violations = watch_csp(page)
    page.goto("/quiz")
    form = page.get_by_role("form", name="Start a quiz")
    form.get_by_label(TOPIC).check()
    form.get_by_label("Multiple choice").uncheck()
    form.get_by_label("Numeric problems").uncheck()
    form.get_by_label("Cards").fill("1")
    form.get_by_role("button", name="Start the quiz").click()
    expect(page.locator(".quiz-item")).to_have_attribute("data-kind", "recall")

    points = key_points_titled(page.locator("h1").inner_text())
    page.locator("#recall-answer").fill(points[0])
    page.get_by_role("button", name=re.compile("Reveal the strong answer")).click()
    expect(page.locator(".quiz-item")).to_have_attribute("data-state", "revealed")

    boxes = page.locator(".tick-list input[type=checkbox]")
    first = page.locator(".tick-list li").nth(0)
    expect(first).to_have_class(re.compile(r"\bsuggested\b"))
    expect(first.locator(".badge.suggested")).to_have_text("suggested")
    expect(boxes.nth(0)).to_be_checked()
    expect(page.locator(".suggest-note")).to_contain_text("seems to cover")
    screenshot(page, f"key-points-quiz-suggested-{width}")

    # The user disagrees with the suggestion and ticks another point instead, then rates.
    suggested = [i for i in range(boxes.count()) if boxes.nth(i).is_checked()]
    other = next(i for i in range(boxes.count()) if i not in suggested)
    boxes.nth(0).uncheck()
    boxes.nth(other).check()
    screenshot(page, f"key-points-quiz-changed-{width}")
    quiz_id = page.locator(".quiz-item").get_attribute("data-quiz-id")
    page.get_by_role("button", name=re.compile("^Good")).click()
    expect(page.locator(".flash")).to_contain_text("Good, due again in")

    view = page.request.get(f"/api/quizzes/{quiz_id}/items/0").json()
    assert view["response"]["key_points"] == sorted([i for i in suggested if i != 0] + [other])
    assert view["suggested"]["points"] == suggested
    assert violations == []
    context.close()


@pytest.mark.parametrize("width", list(WIDTHS))
def test_a_mock_report_shows_suggested_and_confirmed(browser, live_server: str, width: str) -> None:  # type: ignore[no-untyped-def]
    context, page = page_at(browser, live_server, width, timeout_ms=20_000)
    violations = watch_csp(page)
    page.goto("/mock")
    page.get_by_label("Custom", exact=True).check()
    page.get_by_label("Custom length in minutes").fill("5")
    page.get_by_label(TOPIC).check()
    page.get_by_label("Include a coding problem").uncheck()
    page.get_by_role("button", name="Start the interview").click()
    expect(page.locator(".mock-progress")).to_contain_text("Question 1 of")

    # The first question's card, found by its key points' owner: the run page shows only the question.
    question = " ".join(page.locator(".question").first.inner_text().split())
    card = next(
        c for c in catalog().bank.cards if c.topic == "decode-no-mask" and plain(c.question)[:40] in question
    )
    points = [plain(p) for p in card.key_points]
    page.get_by_label("Your answer").fill(f"{points[0]} {points[1]}")
    page.get_by_role("button", name="Answer", exact=True).click()
    expect(page.get_by_text("Interviewer, digging deeper:")).to_be_visible()
    page.once("dialog", lambda dialog: dialog.accept())  # "End the interview now?"
    page.get_by_role("button", name="End the interview").click()
    expect(page.get_by_role("heading", name="Score your answers")).to_be_visible()

    section = page.locator(".mock-score-item").first
    boxes = section.locator("input[name='kp-0']")
    expect(boxes.nth(0)).to_be_checked()
    expect(boxes.nth(1)).to_be_checked()
    expect(section.locator(".tick-list .badge.suggested")).not_to_have_count(0)
    expect(section.locator(".suggest-note")).to_be_visible()
    screenshot(page, f"key-points-mock-score-{width}")
    # Confirm the first suggestion, untick the second, add the last point.
    boxes.nth(1).uncheck()
    boxes.nth(boxes.count() - 1).check()
    confirmed = sum(1 for i in range(boxes.count()) if boxes.nth(i).is_checked())
    page.get_by_role("button", name="See my report").click()

    expect(page.get_by_role("heading", name="Your report")).to_be_visible()
    row = page.locator("#q1")
    expect(row.locator(".suggestion-summary")).to_contain_text("Suggested by the matcher:")
    expect(row.locator(".suggestion-summary")).to_contain_text(f"you confirmed {confirmed}")
    listed = row.locator(".covered-list li")
    expect(listed.nth(0).locator(".badge.suggested")).to_have_text("suggested by the matcher")
    expect(listed.nth(0).locator(".badge.confirmed")).to_have_text("you confirmed")
    expect(listed.nth(1).locator(".badge.unticked")).to_have_text("you unticked it")
    expect(listed.last.locator(".badge.confirmed")).to_have_text("you confirmed")
    screenshot(page, f"key-points-mock-report-{width}")
    assert violations == []
    context.close()

"""A person studies the bank in Chromium: home, search, filter, open a card, reveal, follow-ups."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import screenshot

pytestmark = pytest.mark.browser


def test_study_a_card_end_to_end(page) -> None:  # type: ignore[no-untyped-def]
    page.goto("/")
    expect(page.get_by_role("heading", name="Prepare for LLM inference interviews")).to_be_visible()
    names = {c["name"] for c in page.context.cookies()}
    assert {"kvprep_session", "kvprep_device"} <= names  # the guest session, and this browser's device id

    # Search from the header.
    page.get_by_role("searchbox", name="Search cards").first.fill("query cached")
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(r"/cards\?q=query\+cached"))
    expect(page.locator(".card-item").first).to_be_visible()

    # Filter by topic and difficulty.
    page.goto("/cards")
    filters = page.get_by_role("search", name="Filter cards")
    filters.get_by_label("Topic").select_option("kv-cache-contents")
    filters.get_by_label("Difficulty").select_option("easy")
    filters.get_by_role("button", name="Filter").click()
    expect(page).to_have_url(re.compile(r"topic=kv-cache-contents"))
    titles = page.locator(".card-item a")
    expect(titles.first).to_be_visible()
    for badge in page.locator(".card-item .badge").all_inner_texts():
        assert badge.lower() == "easy"

    # Open the card: only the question shows until the answer is revealed.
    page.get_by_role("link", name="What exactly does the KV cache store?").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("What exactly does the KV cache store?")
    answer = page.locator("#answer")
    expect(answer).to_be_hidden()
    page.get_by_role("button", name="Reveal the strong answer").click()
    expect(answer).to_be_visible()
    expect(page.locator(".key-points li")).to_have_count(5)

    # Follow-ups come one at a time, each answer on request.
    follow_ups = page.locator(".follow-up")
    expect(follow_ups.nth(0)).to_be_visible()
    expect(follow_ups.nth(1)).to_be_hidden()
    follow_ups.nth(0).get_by_role("button", name="Show the answer").click()
    expect(follow_ups.nth(0).locator(".fu-answer")).to_be_visible()
    page.get_by_role("button", name="Next follow-up").click()
    expect(follow_ups.nth(1)).to_be_visible()
    expect(page.get_by_role("button", name="Next follow-up")).to_be_hidden()

    expect(page.locator(".wrong-answer").first).to_contain_text("attention scores")
    expect(page.locator(".sources li").first).to_contain_text("Vaswani")
    screenshot(page, "card-revealed")


def test_unknown_card_is_a_friendly_404(page) -> None:  # type: ignore[no-untyped-def]
    response = page.goto("/cards/no-such-card")
    assert response.status == 404
    expect(page.get_by_role("heading", level=1)).to_have_text("Not found")

"""The card list's own form and pager, used as a person leaves them: empty fields mean "no filter"."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import screenshot

pytestmark = pytest.mark.browser


def _count(page) -> int:  # type: ignore[no-untyped-def]
    text = page.locator("#result-count").inner_text()
    match = re.match(r"(\d+) cards?", text)
    assert match, text
    return int(match.group(1))


def test_search_with_the_defaults_left_in_the_other_fields(page) -> None:  # type: ignore[no-untyped-def]
    page.goto("/cards")
    filters = page.get_by_role("search", name="Filter cards")
    # Leave "All topics" and "Any" difficulty as they are: the form sends topic=&difficulty=.
    expect(filters.get_by_label("Topic")).to_have_value("")
    expect(filters.get_by_label("Difficulty")).to_have_value("")
    filters.get_by_label("Search").fill("GQA")
    response_status: list[int] = []
    page.on("response", lambda r: response_status.append(r.status) if "/cards?" in r.url else None)
    filters.get_by_role("button", name="Filter").click()
    expect(page).to_have_url(re.compile(r"/cards\?q=GQA&topic=&difficulty="))
    assert response_status and response_status[-1] == 200, response_status
    expect(page.locator(".error-detail")).to_have_count(0)
    found = _count(page)
    assert found > 0
    expect(page.locator(".card-item").first).to_be_visible()
    # The search box keeps what was typed.
    expect(filters.get_by_label("Search")).to_have_value("GQA")

    # A difficulty alone, with the search box emptied again.
    filters.get_by_label("Search").fill("")
    filters.get_by_label("Difficulty").select_option("hard")
    filters.get_by_role("button", name="Filter").click()
    expect(page).to_have_url(re.compile(r"difficulty=hard"))
    assert response_status[-1] == 200
    hard = _count(page)
    assert hard > 0
    for badge in page.locator(".card-item .badge").all_inner_texts():
        assert badge.lower() == "hard"


def test_pager_reaches_the_last_page_and_back(page) -> None:  # type: ignore[no-untyped-def]
    page.goto("/cards")
    filters = page.get_by_role("search", name="Filter cards")
    filters.get_by_role("button", name="Filter").click()  # everything left empty
    expect(page).to_have_url(re.compile(r"/cards\?q=&topic=&difficulty="))
    total = _count(page)
    pages = -(-total // 20)
    assert pages >= 2, "the bank needs more than one page for this test"
    seen: list[str] = []
    for number in range(1, pages + 1):
        expect(page.locator(".pager [aria-current=page]")).to_have_text(str(number))
        titles = page.locator(".card-item a").all_inner_texts()
        assert titles, f"page {number} is empty"
        seen.extend(titles)
        if number < pages:
            page.get_by_role("navigation", name="Pages").get_by_role("link", name="Next").click()
    # The last page holds the rest, and every card was listed exactly once.
    assert len(page.locator(".card-item").all()) == total - 20 * (pages - 1)
    assert len(seen) == total == len(set(seen))
    expect(page.get_by_role("navigation", name="Pages").get_by_role("link", name="Next")).to_have_count(0)
    screenshot(page, "cards-last-page")
    page.go_back()
    expect(page.locator(".pager [aria-current=page]")).to_have_text(str(pages - 1))
    # A filtered list pages too, and keeps its filter on every page.
    page.goto("/cards")
    filters.get_by_label("Difficulty").select_option("medium")
    filters.get_by_role("button", name="Filter").click()
    medium = _count(page)
    if medium > 20:
        page.get_by_role("navigation", name="Pages").get_by_role("link", name="Next").click()
        expect(page).to_have_url(re.compile(r"difficulty=medium"))
        for badge in page.locator(".card-item .badge").all_inner_texts():
            assert badge.lower() == "medium"

"""The card search, typed into the /cards form as a person does, lists the best matches first,
on SQLite (FTS5, bm25) and PostgreSQL (tsvector, ts_rank), and its pages keep that order."""

from __future__ import annotations

import json
import re
import urllib.request
from collections.abc import Iterator

import pytest
from playwright.sync_api import expect

from app.config import ROOT, Settings
from app.main import create_app
from tests.browser.conftest import page_at, screenshot, serve_in_thread

pytestmark = pytest.mark.browser


@pytest.fixture
def search_page(browser, db_url: str) -> Iterator[object]:  # type: ignore[no-untyped-def]
    app = create_app(Settings(database_url=db_url, content_root=ROOT / "questions", grading_workers=0))
    with serve_in_thread(app, "the search test server") as base:
        context, page = page_at(browser, base, "desktop")
        page.base = base  # type: ignore[attr-defined]
        yield page
        context.close()


def _search(page, words: str) -> None:  # type: ignore[no-untyped-def]
    """Type `words` into Search, leave "All topics" and "Any" as they are, click Filter."""
    page.goto("/cards")
    filters = page.get_by_role("search", name="Filter cards")
    expect(filters.get_by_label("Topic")).to_have_value("")
    expect(filters.get_by_label("Difficulty")).to_have_value("")
    filters.get_by_label("Search").fill(words)
    filters.get_by_role("button", name="Filter").click()
    expect(page).to_have_url(re.compile(r"/cards\?q=.+&topic=&difficulty=$"))


def _titles(page) -> list[str]:  # type: ignore[no-untyped-def]
    return page.locator(".card-item a").all_inner_texts()


def _api_ids(base: str, q: str) -> list[str]:
    with urllib.request.urlopen(f"{base}/api/cards?page_size=100&q={q.replace(' ', '+')}") as response:
        return [c["id"] for c in json.load(response)["items"]]


def test_rope_lists_the_rope_cards_first_and_pages_keep_the_ranking(search_page) -> None:  # type: ignore[no-untyped-def]
    page = search_page
    _search(page, "rope")
    first = _titles(page)
    screenshot(page, f"search-rope-{page.base.rsplit(':', 1)[1]}")
    # Before: "Three KV-cache bugs" (bank order) led, a context-window card came before RoPE's.
    assert "rope" in first[0].lower() and "rope" in first[1].lower() and "rope" in first[2].lower(), first[:5]
    rope_titles = [t for t in first if "rope" in t.lower()]
    assert first[: len(rope_titles)] == rope_titles, first[:8]
    # Page 2, reached by the pager, continues the same ranked list (the API's order).
    assert len(first) == 20
    page.get_by_role("navigation", name="Pages").get_by_role("link", name="Next").click()
    expect(page).to_have_url(re.compile(r"q=rope.*page=2"))
    second = _titles(page)
    hrefs = page.locator(".card-item a").evaluate_all("(links) => links.map((a) => a.pathname)")
    ranked = _api_ids(page.base, "rope")
    assert [h.rsplit("/", 1)[1] for h in hrefs] == ranked[20:40]
    assert len(first) + len(second) == len(ranked)
    # The top card's Next walks the ranked list, not the bank's order.
    page.go_back()
    page.locator(".card-item a").first.click()
    page.locator('.card-nav a[rel="next"]').click()
    expect(page).to_have_url(re.compile(rf"/cards/{ranked[1]}\?"))


def test_paged_attention_ranks_the_pagedattention_cards_in_the_top_three(search_page) -> None:  # type: ignore[no-untyped-def]
    page = search_page
    _search(page, "paged attention")
    top = _titles(page)[:3]
    # Before: they were 5th to 7th, behind "The cache does not fit" and chunked prefill.
    assert "What problem does PagedAttention solve?" in top, top
    assert any(t.startswith("Inside a paged-attention decode kernel") for t in top), top

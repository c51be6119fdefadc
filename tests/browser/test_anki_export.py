"""The Anki buttons clicked as a person clicks them: the browser receives an .apkg it can import."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.services.apkg import read_apkg

pytestmark = pytest.mark.browser


def test_export_a_filtered_card_list(page) -> None:  # type: ignore[no-untyped-def]
    page.goto("/cards")
    filters = page.get_by_role("search", name="Filter cards")
    filters.get_by_label("Topic").select_option(label="Rotary position embeddings")
    filters.get_by_role("button", name="Filter").click()
    expect(page).to_have_url(re.compile(r"topic=rope"))
    count = re.match(r"(\d+) cards?", page.locator("#result-count").inner_text())
    assert count, page.locator("#result-count").inner_text()
    with page.expect_download() as info:
        page.get_by_role("link", name="Export these cards to Anki (.apkg)").click()
    download = info.value
    assert re.fullmatch(r"kvprep-rope-\d{4}-\d{2}-\d{2}\.apkg", download.suggested_filename)
    package = read_apkg(Path(download.path()).read_bytes())
    assert len(package.notes) == int(count.group(1)) > 0
    assert all("kvprep::topic::rope" in n.tags for n in package.notes)


def test_export_my_due_cards_from_the_progress_page(page) -> None:  # type: ignore[no-untyped-def]
    page.goto("/progress")
    # A new visitor: nothing reviewed, so what is due today is today's new cards.
    due_today = int(page.locator("#stat-due-today").inner_text())
    assert due_today > 0
    with page.expect_download() as info:
        page.get_by_role("link", name="Export my due cards to Anki").click()
    download = info.value
    assert re.fullmatch(r"kvprep-due-\d{4}-\d{2}-\d{2}\.apkg", download.suggested_filename)
    assert len(read_apkg(Path(download.path()).read_bytes()).notes) == due_today

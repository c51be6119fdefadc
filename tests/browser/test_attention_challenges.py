"""Tiled attention in Chromium: a full score matrix is caught and said in words, then a pass."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from app.config import ROOT
from tests.browser.conftest import screenshot

pytestmark = pytest.mark.browser

SLUG = "tiled-attention"
SOLUTION = (ROOT / "questions" / "challenges" / SLUG / "solution.py").read_text()
FULL_SCORES = (ROOT / "tests" / "graders" / "cases" / SLUG / "full_score_matrix.py").read_text()


def test_a_full_score_matrix_is_named_then_the_tiled_solution_passes(page) -> None:  # type: ignore[no-untyped-def]
    page.goto("/challenges")
    page.locator(f"a[href='/challenges/{SLUG}']").click()
    editor = page.locator(".cm-content")
    expect(editor).to_contain_text("def tiled_attention")
    expect(editor).to_contain_text("def merge_attention")

    editor.click()
    page.keyboard.press("Control+A")
    page.keyboard.insert_text(FULL_SCORES)
    page.get_by_role("button", name="Submit", exact=True).click()
    verdict = page.locator("#verdict")
    expect(verdict).to_have_class("verdict-banner failed", timeout=30_000)
    expect(page.locator("#diagnosis")).to_contain_text("builds the full score matrix")
    screenshot(page, "tiled-full-scores")

    editor.click()
    page.keyboard.press("Control+A")
    page.keyboard.insert_text(SOLUTION)
    page.get_by_role("button", name="Submit", exact=True).click()
    expect(verdict).to_have_class("verdict-banner passed", timeout=30_000)
    expect(page.locator("#tests li.fail")).to_have_count(0)

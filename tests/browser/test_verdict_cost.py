"""The verdict shows what a passing submission cost beside the reference, and says the figure only
informs: a correct decode step that builds the whole (t, t) mask, pasted into the editor and
submitted at a desktop width and a phone's, passes with "largest tensor 1.0 MiB; reference: ...,
512 KiB" in the cost test's line (graders/checks/decode_step_cost.py)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from app.config import ROOT
from graders.checks.decode_step_cost import NAME
from tests.browser.conftest import WIDTHS, page_at, screenshot

pytestmark = pytest.mark.browser

WASTEFUL = (ROOT / "tests" / "graders" / "cases" / "decode-step" / "full_mask_wasteful.py").read_text()


@pytest.mark.parametrize("width", list(WIDTHS))
def test_a_wasteful_but_correct_step_passes_and_the_page_shows_its_cost(
    browser, live_server: str, width: str
) -> None:  # type: ignore[no-untyped-def]
    context, page = page_at(browser, live_server, width)
    page.goto("/challenges/decode-step")
    editor = page.locator(".cm-content")
    expect(editor).to_contain_text("def step")
    editor.click()
    page.keyboard.press("Control+A")
    page.keyboard.insert_text(WASTEFUL)
    page.get_by_role("button", name="Submit", exact=True).click()
    expect(page.locator("#verdict")).to_have_class("verdict-banner passed", timeout=30_000)
    line = page.locator("#tests li.pass", has_text=NAME)
    expect(line).to_have_count(1)
    message = line.locator(".message")
    expect(message).to_be_visible()
    expect(message).to_contain_text("your decode step: ")
    expect(message).to_contain_text("largest tensor 1.0 MiB; reference: ")
    expect(message).to_contain_text("512 KiB (1.00x the reference's multiply-adds, 2.00x its largest tensor)")
    expect(message).to_contain_text("never decides the verdict")
    screenshot(page, f"challenge-verdict-cost-{width}")
    context.close()

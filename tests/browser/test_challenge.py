"""A person solves a challenge in Chromium: a wrong attempt, its feedback, then a right one."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from app.config import ROOT
from tests.browser.conftest import screenshot

pytestmark = pytest.mark.browser

SLUG = "fix-causal-attention"
SOLUTION = (ROOT / "questions" / "challenges" / SLUG / "solution.py").read_text()


def test_wrong_then_right_submission_in_the_editor(page) -> None:  # type: ignore[no-untyped-def]
    page.goto("/challenges")
    page.locator(f"a[href='/challenges/{SLUG}']").click()
    editor = page.locator(".cm-content")
    expect(editor).to_contain_text("def causal_self_attention")  # the starter, in CodeMirror
    expect(page.get_by_text("Submit a first attempt to unlock the worked solution.")).to_be_visible()

    # Hints come one at a time.
    page.get_by_role("button", name="Show a hint").click()
    expect(page.locator(".hint:visible")).to_have_count(1)

    # The starter has three planted bugs: the verdict says which test failed and why.
    page.get_by_role("button", name="Submit", exact=True).click()
    verdict = page.locator("#verdict")
    expect(verdict).to_have_class("verdict-banner failed", timeout=30_000)
    expect(page.locator("#tests li.fail").first).to_be_visible()
    expect(page.locator("#tests li.fail .message").first).not_to_be_empty()
    expect(page.locator("#diagnosis")).to_contain_text("softmax")
    screenshot(page, "challenge-failed")

    # Replace the code with a correct solution, as a paste would, and submit again.
    editor.click()
    page.keyboard.press("Control+A")
    page.keyboard.insert_text(SOLUTION)
    page.get_by_role("button", name="Submit", exact=True).click()
    expect(verdict).to_have_class("verdict-banner passed", timeout=30_000)
    expect(page.locator("#tests li.fail")).to_have_count(0)
    screenshot(page, "challenge-passed")

    # The draft survives a reload; the history keeps both attempts; the solution is unlocked.
    page.reload()
    expect(page.locator(".cm-content")).to_contain_text("masked_fill")
    expect(page.locator("#history li")).to_have_count(2)
    page.get_by_role("button", name="Show the worked solution").click()
    expect(page.locator("#solution")).to_be_visible()

"""A failed Submit shows the hint for the mistake the verdict names, first among the hints.

fix-causal-attention's starter, submitted as it loads, carries three planted mistakes; the verdict
names them, and the hints section opens with the hint written for the first one (challenge.yaml's
mistake_hints, keyed by the mistake's id), the next one waiting behind "Show a hint".
"""

from __future__ import annotations

import pytest
import yaml
from playwright.sync_api import expect

from graders.mistakes import mistakes_in
from tests.browser.conftest import screenshot
from tests.graders.golden import CHALLENGES

pytestmark = pytest.mark.browser

SLUG = "fix-causal-attention"


def test_a_failed_submit_shows_the_named_mistakes_hint_first(page) -> None:  # type: ignore[no-untyped-def]
    hints = yaml.safe_load((CHALLENGES / SLUG / "challenge.yaml").read_text())["mistake_hints"]
    page.goto(f"/challenges/{SLUG}")
    expect(page.locator(".cm-content")).to_be_visible()
    expect(page.locator("#mistake-hints .hint")).to_have_count(0)  # nothing before a verdict
    page.get_by_role("button", name="Submit", exact=True).click()
    expect(page.locator("#verdict")).to_have_class("verdict-banner failed", timeout=30_000)

    named = mistakes_in(SLUG, page.locator("#diagnosis p.diagnosis").all_inner_texts())
    assert named[:3] == ["MASK_AFTER_SOFTMAX", "SCALE_SQRT_D", "MERGE_NO_TRANSPOSE"], named
    shown = page.locator("#mistake-hints .hint")
    expect(shown).to_have_count(len(named))
    expect(shown.first).to_be_visible()
    expect(shown.first).to_contain_text(hints[named[0]])
    expect(shown.nth(1)).to_be_hidden()
    expect(page.locator(".hints .hint:visible")).to_have_count(1)  # the generic ones wait
    page.get_by_role("link", name="A hint for this mistake").click()
    expect(shown.first).to_be_in_viewport()
    screenshot(page, "challenge-mistake-hint")

    page.get_by_role("button", name="Show a hint").click()
    expect(shown.nth(1)).to_be_visible()
    expect(shown.nth(1)).to_contain_text(hints[named[1]])

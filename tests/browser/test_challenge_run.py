"""A person tries code with Run in Chromium, at desktop width and on a phone: a wrong solution on the
visible examples, the reference's output beside theirs and the difference, then a custom shape.
Screenshots go to test-artifacts/challenge-run-*.png.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import expect

from app.config import ROOT
from tests.browser.conftest import WIDTHS, page_at, screenshot, watch_csp

pytestmark = pytest.mark.browser

SLUG = "fix-causal-attention"
WRONG = (ROOT / "tests" / "graders" / "cases" / SLUG / "no_mask.py").read_text()


@pytest.fixture(params=sorted(WIDTHS))
def sized_page(request, browser, live_server: str) -> Iterator[tuple[object, str]]:  # type: ignore[no-untyped-def]
    context, page = page_at(browser, live_server, request.param)
    violations = watch_csp(page)
    yield page, request.param
    context.close()
    assert violations == [], "the Content-Security-Policy blocked something a page needs"


def no_sideways_scroll(page) -> None:  # type: ignore[no-untyped-def]
    width = page.evaluate("window.innerWidth")
    assert page.evaluate("document.documentElement.scrollWidth") <= width


def test_run_shows_the_reference_beside_a_wrong_solution_then_a_custom_shape(sized_page) -> None:  # type: ignore[no-untyped-def]
    page, size = sized_page
    page.goto(f"/challenges/{SLUG}")
    editor = page.locator(".cm-content")
    expect(editor).to_contain_text("def causal_self_attention")
    editor.click()
    page.keyboard.press("Control+A")
    page.keyboard.insert_text(WRONG)

    # The form shows each parameter with its default and bounds.
    expect(page.get_by_label("Tokens T")).to_have_value("5")
    expect(page.locator("#run-T-hint")).to_have_text("T, 1 to 32")
    page.get_by_role("button", name="Run", exact=True).click()
    verdict = page.locator("#run-verdict")
    expect(verdict).to_have_class("verdict-banner failed", timeout=30_000)
    expect(verdict).to_contain_text("cases match the reference")
    failed = page.locator("#run-rows tr.fail").first
    expect(failed).to_contain_text("one sequence, two heads")
    expect(failed.locator("td").nth(2)).to_contain_text("tensor (1, 5, 16) float32")  # the reference's
    expect(failed.locator("td").nth(3)).to_contain_text("tensor (1, 5, 16) float32")  # theirs
    expect(failed.locator("td").nth(4)).to_contain_text("max |diff|")
    expect(failed.locator("td").nth(4)).to_contain_text("Likely cause: there is no causal mask")
    # No submission was made: the Submit side is untouched.
    expect(page.locator("#no-attempts")).to_be_visible()
    screenshot(page, f"challenge-run-{size}-examples")

    # A shape that does not fit is refused beside its field, and what was typed stays.
    page.get_by_label("Tokens T").fill("9")
    page.get_by_label("Model width d").fill("24")
    page.get_by_label("Heads").fill("5")
    page.get_by_role("button", name="Run", exact=True).click()
    expect(page.locator("#run-d-error")).to_have_text(
        "d must be a multiple of n_heads (24 is not a multiple of 5)"
    )
    expect(page.get_by_label("Heads")).to_have_value("5")
    expect(page.get_by_label("Tokens T")).to_have_value("9")

    # The custom shape: the reference's output for it beside theirs.
    page.get_by_label("Heads").fill("3")
    page.get_by_role("button", name="Run", exact=True).click()
    expect(page.locator("#run-d-error")).to_be_hidden()
    mine = page.locator("#run-rows tr", has_text="Your input")
    expect(mine).to_contain_text("B=1, T=9, d=24, n_heads=3, seed=0", timeout=30_000)
    expect(mine.locator("td").nth(2)).to_contain_text("tensor (1, 9, 24) float32")
    expect(mine.locator("td").nth(3)).to_contain_text("tensor (1, 9, 24) float32")
    expect(mine.locator("td").nth(4)).to_contain_text("first at [")
    no_sideways_scroll(page)
    page.locator("#run-rows").scroll_into_view_if_needed()
    screenshot(page, f"challenge-run-{size}-custom")

    # The typed input survives a reload.
    page.reload()
    expect(page.get_by_label("Model width d")).to_have_value("24")
    expect(page.get_by_label("Heads")).to_have_value("3")

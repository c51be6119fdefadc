"""Small things a new user notices, clicked as they meet them: the Run panel's descriptions show
code as code (not `backticks`), Reset asks before throwing a draft away, and a mistyped address says
what happened in words (not "Not found" twice). At a desktop width and a phone's.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import WIDTHS, page_at

pytestmark = pytest.mark.browser


@pytest.mark.parametrize("width", list(WIDTHS))
def test_run_descriptions_reset_and_a_missing_page(browser, live_server: str, width: str) -> None:  # type: ignore[no-untyped-def]
    context, page = page_at(browser, live_server, width)
    page.goto("/challenges/decode-step")
    summary = page.locator("#run-panel > p.muted").first
    expect(summary.locator("code", has_text="steps")).to_be_visible()
    assert "`" not in page.locator("#run-panel").inner_text()

    # Reset with a changed draft asks first; dismissing keeps the draft, accepting restores the starter.
    editor = page.locator(".cm-content")
    expect(editor).to_be_visible()
    editor.click()
    page.keyboard.press("Control+End")
    page.keyboard.insert_text("\n# my own line\n")
    asked: list[str] = []

    def dismiss(dialog) -> None:  # type: ignore[no-untyped-def]
        asked.append(dialog.message)
        dialog.dismiss()

    page.once("dialog", dismiss)
    page.get_by_role("button", name="Reset to starter code").click()
    expect(editor).to_contain_text("# my own line")
    assert asked and "draft" in asked[0]
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Reset to starter code").click()
    expect(editor).not_to_contain_text("# my own line")

    page.goto("/no-such-page")
    expect(page.get_by_role("heading", level=1)).to_have_text("Not found")
    expect(page.locator(".error-detail")).to_contain_text("no page at this address")
    context.close()


RAISES = "def step(x, w_qkv, w_o, n_heads, cache):\n    raise ValueError('not written yet')\n"


@pytest.mark.parametrize("width", list(WIDTHS))
def test_a_raising_run_still_shows_the_reference_and_hints_survive_a_reload(
    browser, live_server: str, width: str
) -> None:  # type: ignore[no-untyped-def]
    context, page = page_at(browser, live_server, width)
    page.goto("/challenges/decode-step")
    editor = page.locator(".cm-content")
    expect(editor).to_contain_text("def step")
    editor.click()
    page.keyboard.press("Control+A")
    page.keyboard.insert_text(RAISES)
    page.get_by_role("button", name="Run", exact=True).click()
    row = page.locator("#run-rows tr.fail").first
    expect(row.locator("td").nth(4)).to_contain_text("not written yet", timeout=30_000)
    # The code raised, so it has no output; the reference's is shown all the same, not "—".
    expected = row.locator("td").nth(2)
    expect(expected).to_contain_text("tensor (1, 3, 16) float32")
    expect(row.locator("td").nth(3)).to_have_text("—")

    # A revealed hint stays revealed after a reload; the next one is still behind the button.
    show = page.get_by_role("button", name="Show a hint")
    show.click()
    hints = page.locator(".hints .hint:not(.mistake-hint)")
    expect(hints.nth(0)).to_be_visible()
    expect(hints.nth(1)).to_be_hidden()
    page.reload()
    expect(hints.nth(0)).to_be_visible()
    expect(hints.nth(1)).to_be_hidden()
    show.click()
    expect(hints.nth(1)).to_be_visible()
    context.close()

"""Issue 15's wording rules as a person reads them, at a desktop width and a phone's: a grader's
message names an exception without a dangling colon and gives no "0x the right answer" for a
zero, and a one-minute interview says "1 minute". Screenshots in test-artifacts/wording-*.png.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import WIDTHS, page_at, screenshot
from tests.graders.test_wording import BARE_RAISE, ZERO  # the same two submissions, through a browser

pytestmark = pytest.mark.browser

TOPIC = "Why a decode step needs no mask"


def _submit(page, code: str) -> list[str]:  # type: ignore[no-untyped-def]
    """Paste `code` over the editor's, submit, and return the failed tests' messages."""
    page.locator(".cm-content").click()
    page.keyboard.press("Control+A")
    page.keyboard.insert_text(code)
    page.get_by_role("button", name="Submit", exact=True).click()
    expect(page.locator("#verdict")).to_have_class(
        re.compile("verdict-banner (failed|error)"), timeout=60_000
    )
    messages = page.locator("#tests li.fail .message")
    expect(messages.first).to_be_visible()
    return messages.all_inner_texts()


@pytest.mark.parametrize("name", list(WIDTHS))
def test_grader_messages_read_right(browser, live_server: str, name: str) -> None:  # type: ignore[no-untyped-def]
    context, page = page_at(browser, live_server, name)
    page.goto("/challenges/kv-cache-bytes")
    raised = _submit(page, BARE_RAISE)
    assert any("your code raised ValueError" in m for m in raised), raised
    assert not any(re.search(r"ValueError:\s*($|\W)", m) for m in raised), raised
    screenshot(page, f"wording-bare-exception-{name}")
    zero = _submit(page, ZERO)
    assert any("got 0 bytes" in m for m in zero), zero
    assert not any("0x the right answer" in m for m in zero), zero
    screenshot(page, f"wording-zero-answer-{name}")
    context.close()


@pytest.mark.parametrize("name", list(WIDTHS))
def test_a_one_minute_interview_says_1_minute(browser, clocked_server, name: str) -> None:  # type: ignore[no-untyped-def]
    base, clock = clocked_server
    context, page = page_at(browser, base, name)
    page.goto("/mock")
    expect(page.locator("#plan-rule")).to_contain_text(re.compile(r"coding problem takes \d+ minutes"))
    page.get_by_label("Custom", exact=True).check()
    page.get_by_label("Custom length in minutes").fill("1")
    page.get_by_label(TOPIC).check()
    page.get_by_label("Include a coding problem").uncheck()
    page.get_by_role("button", name="Start the interview").click()
    expect(page.locator(".mock-progress")).to_contain_text("Question 1 of")
    clock.advance(70)  # past the one minute
    page.reload()
    expect(page.get_by_role("heading", name="Score your answers")).to_be_visible()
    ended = page.locator("#ended-by")
    expect(ended).to_contain_text("the clock ran the full 1 minute.")
    expect(ended).not_to_contain_text("1 minutes")
    screenshot(page, f"wording-one-minute-{name}")
    context.close()

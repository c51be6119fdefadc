"""The lab's run page names things as the cards do: the experiments in words (never
`position_limit`), "GPT-2 small, our CPU run" (never "seed 000"), no empty seed column beside a
tiny model's times, and the position limit as token and index ("token 129 needs position index
128") with why the tiny model's limit is not GPT-2 small's 1,024. At a desktop width and a phone's.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import WIDTHS, assert_no_sideways_scroll, page_at, screenshot

pytestmark = pytest.mark.browser


@pytest.mark.parametrize("width", list(WIDTHS))
def test_a_tiny_run_is_named_as_the_cards_name_things(browser, live_server: str, width: str) -> None:  # type: ignore[no-untyped-def]
    context, page = page_at(browser, live_server, width)
    # Signed in: guests share a few lab runs an hour per address, and this session's server has
    # given 127.0.0.1 others (tests/browser/test_lab*.py).
    page.goto("/")
    page.get_by_role("link", name="Sign up").click()
    page.get_by_label("Email").fill(f"lab-names-{width}@example.com")
    page.get_by_label("Password", exact=True).fill("correct horse battery")
    page.get_by_label("Password again").fill("correct horse battery")
    page.get_by_role("button", name="Create my account").click()
    expect(page.locator(".flash")).to_contain_text("Your account is ready")
    page.goto("/lab")
    form = page.get_by_role("form", name="Start a lab run")
    form.get_by_label("A tiny model").check()
    form.get_by_label(re.compile("Prefill time against prompt length")).check()
    form.get_by_label(re.compile("Position 1,025 of GPT-2")).check()
    form.get_by_role("button", name="Run the lab").click()
    expect(page.locator("#lab-status")).to_have_text("done", timeout=90_000)

    expect(page.locator("#lab-heading")).to_have_text(
        "a tiny model (128 positions) · prefill, the position limit"
    )
    position = page.locator("#result-position")
    expect(position.get_by_role("heading")).to_contain_text("Token 129 needs position index 128")
    expect(position).to_contain_text("token 129 needs position index 128")
    why = page.locator("#lab-position-why")
    expect(why).to_contain_text("128 rows")
    expect(why).to_contain_text("token 1,025, which needs index 1,024")
    # No column of empty seed cells: a sentence says why there is no GPT-2 small time beside these.
    prefill = page.locator("#result-prefill")
    expect(prefill.locator("th")).to_have_count(2)
    expect(page.locator("#lab-prefill-no-seed")).to_contain_text("timed GPT-2 small")
    body = page.locator("main").inner_text()
    assert "position_limit" not in body and "seed 000" not in body and "position 129" not in body, body
    assert_no_sideways_scroll(page, f"lab run at {width}")
    screenshot(page, f"lab-names-{width}")

    # The lab page lists the run by the same words.
    page.get_by_role("link", name="The lab").click()
    expect(page.locator("#lab-runs")).to_contain_text(
        "a tiny model (128 positions) · prefill, the position limit"
    )
    context.close()

"""The challenge page as a LeetCode user expects it, at desktop width and on a phone (390x844):
the prompt beside the editor (stacked on a phone), 4-space indentation, Ctrl+Enter submits, a
summary line with repeated failures folded, the last verdict after a reload, past attempts that
open with their code and verdict, and the list's attempted / passed.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import expect

from app.config import ROOT
from tests.browser.conftest import screenshot, watch_csp

pytestmark = pytest.mark.browser

SLUG = "kv-cache-bytes"  # its starter raises NotImplementedError in every one of its 17 tests
SOLUTION = (ROOT / "questions" / "challenges" / SLUG / "solution.py").read_text()
VIEWPORTS = {"desktop": {"width": 1280, "height": 900}, "phone": {"width": 390, "height": 844}}


@pytest.fixture(params=list(VIEWPORTS))
def screen(request: pytest.FixtureRequest, browser, live_server: str) -> Iterator[tuple[str, object]]:  # type: ignore[no-untyped-def]
    name = request.param
    phone = name == "phone"
    context = browser.new_context(
        base_url=live_server, viewport=VIEWPORTS[name], is_mobile=phone, has_touch=phone
    )
    page = context.new_page()
    page.set_default_timeout(15_000)
    violations = watch_csp(page)
    yield name, page
    context.close()
    assert violations == [], "the Content-Security-Policy blocked something a page needs"


def no_sideways_scroll(page) -> None:  # type: ignore[no-untyped-def]
    width = page.viewport_size["width"]
    assert page.evaluate("document.documentElement.scrollWidth") <= width


def code(page) -> str:  # type: ignore[no-untyped-def]
    """What the editor holds (CodeMirror keeps the hidden textarea in step)."""
    return str(page.locator("#code").input_value())


def test_solve_a_challenge_as_on_leetcode(screen) -> None:  # type: ignore[no-untyped-def]
    name, page = screen
    page.goto("/challenges")
    item = page.locator(f"li.card-item[data-slug='{SLUG}']")
    expect(item.locator(".standing")).to_have_count(0)  # nothing tried yet
    item.get_by_role("link").click()
    editor = page.locator(".cm-content")
    expect(editor).to_contain_text("def kv_cache_bytes")

    # Prompt and editor side by side on a wide screen; stacked, without sideways scroll, on a phone.
    brief = page.locator(".challenge-brief").bounding_box()
    work = page.locator(".challenge-work").bounding_box()
    assert brief is not None and work is not None
    if name == "desktop":
        assert brief["x"] + brief["width"] <= work["x"] and abs(brief["y"] - work["y"]) < 40, (brief, work)
    else:
        assert work["y"] >= brief["y"] + brief["height"] - 1, (brief, work)
        no_sideways_scroll(page)

    # Enter after a `def ...:` line indents by 4 spaces, as the starters do; Tab adds 4 more.
    editor.click()
    page.keyboard.press("Control+End")
    page.keyboard.insert_text("\n\n")  # as pasted: no indentation of its own
    page.keyboard.type("def helper(x):")
    page.keyboard.press("Enter")
    expect(page.locator("#code")).to_have_value(code(page))  # in step with the editor
    assert code(page).endswith("def helper(x):\n    "), repr(code(page)[-40:])
    page.keyboard.press("Tab")
    assert code(page).endswith("def helper(x):\n        "), repr(code(page)[-40:])
    page.keyboard.type("return x")

    # Ctrl+Enter in the editor submits: every test fails the same way, said once with a count.
    page.keyboard.press("Control+Enter")
    verdict = page.locator("#verdict")
    expect(verdict).to_have_class("verdict-banner failed", timeout=30_000)
    expect(page.locator("#verdict-summary")).to_have_text("0/17 passed")
    expect(page.locator("#tests li")).to_have_count(1)
    folded = page.locator("#tests li.fail.folded")
    expect(folded.locator(".repeat-count")).to_have_text("and 16 more tests, the same way")
    expect(folded.locator(".message")).to_have_text("your code raised NotImplementedError")
    others = folded.locator(".also-failed")
    others.locator("summary").click()  # the other tests' names, folded away until asked for
    expect(others.locator(".other-tests p")).to_have_count(16)
    assert not code(page).endswith("\n\n"), "Ctrl+Enter must not also insert a line"
    screenshot(page, f"challenge-page-folded-{name}")

    # The list says it was attempted; back on the page, the draft and that verdict are there.
    page.goto("/challenges")
    expect(item.locator(".standing")).to_have_text("attempted")
    expect(item.locator(".attempt-count")).to_have_text("1 attempt")
    item.get_by_role("link").click()
    expect(verdict).to_have_class("verdict-banner failed")
    expect(page.locator("#verdict-summary")).to_have_text("0/17 passed")
    expect(editor).to_contain_text("def helper(x):")

    # The right code, submitted the same way.
    editor.click()
    page.keyboard.press("Control+A")
    page.keyboard.insert_text(SOLUTION)
    page.keyboard.press("Control+Enter")
    expect(verdict).to_have_class("verdict-banner passed", timeout=30_000)
    expect(page.locator("#verdict-summary")).to_have_text("17/17 passed")
    expect(page.locator("#history li")).to_have_count(2)

    # After a reload the last verdict is still there.
    page.reload()
    expect(verdict).to_have_class("verdict-banner passed")
    expect(page.locator("#verdict-summary")).to_have_text("17/17 passed")
    expect(page.locator("#tests li.pass")).to_have_count(17)
    expect(page.locator("#history li").first).to_contain_text("17/17 passed")
    screenshot(page, f"challenge-page-reloaded-{name}")
    if name == "phone":
        no_sideways_scroll(page)

    # The first attempt opens with its code and its verdict; it can go back into the editor.
    page.locator("#history li").nth(1).get_by_role("button").click()
    past = page.locator("#past-attempt")
    expect(past).to_be_visible()
    expect(page.locator("#past-attempt-verdict")).to_contain_text("Failed")
    expect(page.locator("#past-attempt-verdict")).to_contain_text("0/17 passed")
    expect(page.locator("#past-attempt-tests li.folded")).to_have_count(1)
    expect(page.locator("#past-attempt-code")).to_contain_text("def helper(x):\n        return x")
    expect(page.locator("#past-attempt-code")).to_contain_text("raise NotImplementedError")
    screenshot(page, f"challenge-page-past-attempt-{name}")
    if name == "phone":
        no_sideways_scroll(page)
    past.get_by_role("button", name="Load this code into the editor").click()
    expect(past).to_be_hidden()
    expect(editor).to_contain_text("raise NotImplementedError")
    assert "def helper(x):\n        return x" in code(page)

    # The list says the challenge was passed, and in how many attempts.
    page.goto("/challenges")
    expect(item.locator(".standing")).to_have_text("passed")
    expect(item.locator(".attempt-count")).to_have_text("2 attempts")
    screenshot(page, f"challenge-list-standing-{name}")

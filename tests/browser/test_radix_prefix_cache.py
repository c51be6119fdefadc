"""radix-prefix-cache in Chromium, at desktop width and on a phone: the challenge reached from the list,
a wrong cache pasted into the editor, Run shows the call-by-call trace beside the reference's with the
first differing call marked, Submit names the mistake and shows the shrunk script, and the worked
solution passes with its hit rate beside the reference's. Screenshots go to test-artifacts/radix-*.png.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import expect

from app.config import ROOT
from tests.browser.conftest import WIDTHS, page_at, screenshot, watch_csp

pytestmark = pytest.mark.browser

SLUG = "radix-prefix-cache"
SOLUTION = (ROOT / "questions" / "challenges" / SLUG / "solution.py").read_text()
MOST_RECENT = (ROOT / "tests" / "graders" / "cases" / SLUG / "most_recent.py").read_text()


@pytest.fixture(params=sorted(WIDTHS))
def sized_page(request, browser, live_server: str) -> Iterator[tuple[object, str]]:  # type: ignore[no-untyped-def]
    context, page = page_at(browser, live_server, request.param)
    violations = watch_csp(page)
    yield page, request.param
    context.close()
    assert violations == [], "the Content-Security-Policy blocked something a page needs"


def paste_code(page, code: str) -> None:  # type: ignore[no-untyped-def]
    editor = page.locator(".cm-content")
    expect(editor).to_contain_text("class PrefixCache")  # the starter is in the editor
    editor.click()
    page.keyboard.press("Control+A")
    page.keyboard.insert_text(code)


def test_run_shows_the_trace_submit_names_the_mistake_and_the_solution_passes(sized_page) -> None:  # type: ignore[no-untyped-def]
    page, size = sized_page
    page.goto("/challenges")
    page.locator(f"a[href='/challenges/{SLUG}']").click()
    expect(page.locator("h1")).to_contain_text("radix prefix cache")
    paste_code(page, MOST_RECENT)

    # Run with the custom input's defaults as a person leaves them: the trace, the first difference marked.
    expect(page.get_by_label("Capacity (tokens)", exact=True)).to_have_value("6")
    page.get_by_role("button", name="Run", exact=True).click()
    expect(page.locator("#run-verdict")).to_have_class("verdict-banner failed", timeout=30_000)
    trace = page.locator("table.run-trace").first
    expect(trace).to_be_visible()
    expect(trace.locator("tbody tr").first).to_contain_text("insert [")
    expect(trace.locator("tr.first-difference")).to_have_count(1)
    expect(page.locator("#run-rows")).to_contain_text("call-by-call trace: the first difference is at row")
    screenshot(page, f"radix-{size}-run-trace")

    # Submitting it names the mistake, with the shortest failing script in the failed test.
    page.get_by_role("button", name="Submit", exact=True).click()
    verdict = page.locator("#verdict")
    expect(verdict).to_have_class("verdict-banner failed", timeout=30_000)
    expect(page.locator("#diagnosis")).to_contain_text("the most recently used leaf is evicted")
    expect(page.locator("#tests li.fail").first).to_contain_text("PrefixCache(capacity=")
    expect(page.locator("#tests")).to_contain_text("your hit rate")

    # The worked solution passes; the verdict reports its hit rate beside the reference's.
    paste_code(page, SOLUTION)
    page.get_by_role("button", name="Submit", exact=True).click()
    expect(verdict).to_have_class("verdict-banner passed", timeout=30_000)
    expect(page.locator("#tests li.fail")).to_have_count(0)
    expect(page.locator("#tests")).to_contain_text("the reference's")
    width = page.evaluate("window.innerWidth")
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    screenshot(page, f"radix-{size}-passed")

"""The continuous-batching scheduler in Chromium, at desktop width and on a phone: Run shows the
step-by-step trace beside the reference's with the first differing step marked, a wrong scheduler
is told the rule it broke, and the worked solution passes with its throughput figures.
Screenshots go to test-artifacts/scheduler-*.png.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import expect

from app.config import ROOT
from tests.browser.conftest import WIDTHS, page_at, screenshot, watch_csp

pytestmark = pytest.mark.browser

SLUG = "continuous-batching"
SOLUTION = (ROOT / "questions" / "challenges" / SLUG / "solution.py").read_text()
TO_BACK = (ROOT / "tests" / "graders" / "cases" / SLUG / "preempted_to_back.py").read_text()


@pytest.fixture(params=sorted(WIDTHS))
def sized_page(request, browser, live_server: str) -> Iterator[tuple[object, str]]:  # type: ignore[no-untyped-def]
    context, page = page_at(browser, live_server, request.param)
    violations = watch_csp(page)
    yield page, request.param
    context.close()
    assert violations == [], "the Content-Security-Policy blocked something a page needs"


def type_code(page, code: str) -> None:  # type: ignore[no-untyped-def]
    editor = page.locator(".cm-content")
    expect(editor).to_contain_text("class Scheduler")
    editor.click()
    page.keyboard.press("Control+A")
    page.keyboard.insert_text(code)


def test_run_shows_the_trace_then_the_solution_passes(sized_page) -> None:  # type: ignore[no-untyped-def]
    page, size = sized_page
    page.goto("/challenges")
    page.locator(f"a[href='/challenges/{SLUG}']").click()
    type_code(page, TO_BACK)

    # Run with the defaults left as they are: the trace, reference beside theirs, first difference marked.
    expect(page.get_by_label("Blocks", exact=True)).to_have_value("6")
    page.get_by_role("button", name="Run", exact=True).click()
    verdict = page.locator("#run-verdict")
    expect(verdict).to_have_class("verdict-banner failed", timeout=30_000)
    trace = page.locator("table.run-trace").first
    expect(trace).to_be_visible()
    expect(trace.locator("tbody tr").first).to_contain_text("add A(")
    expect(trace.locator("tr.first-difference")).to_have_count(1)
    expect(page.locator("#run-rows")).to_contain_text("step-by-step trace: the first difference is at row")
    screenshot(page, f"scheduler-{size}-run-trace")

    # Submitting the wrong scheduler names the rule it broke, with a shrunk script.
    page.get_by_role("button", name="Submit", exact=True).click()
    submitted = page.locator("#verdict")
    expect(submitted).to_have_class("verdict-banner failed", timeout=30_000)
    expect(page.locator("#diagnosis")).to_contain_text(
        "a preempted request goes to the back of the waiting queue"
    )
    expect(page.locator("#tests")).to_contain_text("because a preempted request goes back to the front")

    # The worked solution passes, and the verdict reports throughput beside the reference's.
    type_code(page, SOLUTION)
    page.get_by_role("button", name="Submit", exact=True).click()
    expect(submitted).to_have_class("verdict-banner passed", timeout=30_000)
    expect(page.locator("#tests li.fail")).to_have_count(0)
    expect(page.locator("#tests")).to_contain_text("tokens per step")
    width = page.evaluate("window.innerWidth")
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    screenshot(page, f"scheduler-{size}-passed")

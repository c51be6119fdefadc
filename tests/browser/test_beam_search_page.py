"""beam-search in Chromium, at desktop width and on a phone: the challenge reached from the list, a search
that never reorders its cache pasted into the editor and Submit names that mistake, then the worked
solution pasted the same way passes, and the verdict shows the hypotheses of a fixed search with their
scores beside the reference's. Screenshots go to test-artifacts/beam-*.png.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import expect

from app.config import ROOT
from tests.browser.conftest import WIDTHS, page_at, screenshot, watch_csp

pytestmark = pytest.mark.browser

SLUG = "beam-search"
SOLUTION = (ROOT / "questions" / "challenges" / SLUG / "solution.py").read_text()
NO_REORDER = (ROOT / "tests" / "graders" / "cases" / SLUG / "no_reorder.py").read_text()


@pytest.fixture(params=sorted(WIDTHS))
def sized_page(request, browser, live_server: str) -> Iterator[tuple[object, str]]:  # type: ignore[no-untyped-def]
    context, page = page_at(browser, live_server, request.param)
    violations = watch_csp(page)
    yield page, request.param
    context.close()
    assert violations == [], "the Content-Security-Policy blocked something a page needs"


def paste_code(page, code: str) -> None:  # type: ignore[no-untyped-def]
    editor = page.locator(".cm-content")
    expect(editor).to_contain_text("def beam_search")  # the starter (or the last paste) is in the editor
    editor.click()
    page.keyboard.press("Control+A")
    page.keyboard.insert_text(code)


def test_submit_names_the_missing_reorder_then_the_solution_passes_with_hypotheses(sized_page) -> None:  # type: ignore[no-untyped-def]
    page, size = sized_page
    page.goto("/challenges")
    page.locator(f"a[href='/challenges/{SLUG}']").click()
    expect(page.locator("h1")).to_contain_text("Beam search on a cache")
    paste_code(page, NO_REORDER)

    # A search that never reorders its cache is told so by name.
    page.get_by_role("button", name="Submit", exact=True).click()
    verdict = page.locator("#verdict")
    expect(verdict).to_have_class("verdict-banner failed", timeout=30_000)
    expect(page.locator("#diagnosis")).to_contain_text("the cache is never reordered")
    # The first failed search says what differed first: what it returned, or (when a lucky draw
    # returned the same) the rows it stepped, beside the rule's.
    expect(page.locator("#tests li.fail").first).to_contain_text(
        re.compile(r"the rule returns|the rule's live beams are")
    )

    # The worked solution passes; the last test shows the hypotheses and scores beside the reference's.
    paste_code(page, SOLUTION)
    page.get_by_role("button", name="Submit", exact=True).click()
    expect(verdict).to_have_class("verdict-banner passed", timeout=30_000)
    expect(page.locator("#tests li.fail")).to_have_count(0)
    figure = page.locator("#tests li", has_text="the hypotheses of a fixed search, beside the reference's")
    expect(figure).to_contain_text("yours [3 1 4 | 2 9] -0.1875")
    expect(figure).to_contain_text("the reference's [3 1 4 | 2 9] -0.1875")
    width = page.evaluate("window.innerWidth")
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    screenshot(page, f"beam-{size}-passed")

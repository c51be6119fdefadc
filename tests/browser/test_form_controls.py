"""Form controls as a person reads them. Captions in one row line up: the card filters' "Search"
sat 4 px below "Topic" and "Difficulty" (a search box and a menu of different heights, aligned at
their bottoms). And a menu shows its whole choice: "My config.json (paste below)" read "My config.jso" in the
calculator's 160 px model menu. Every option of every menu on the pages that have them is measured
in the menu's own font against the menu's width, less its arrow, at a desktop and a phone width;
the calculator's menus are also picked as a person picks them."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import WIDTHS, page_at, screenshot

pytestmark = pytest.mark.browser

# The closed menu's arrow and padding take about this much of its width in Chromium.
ARROW_PX = 28

# [menu name, its width, the option's text width, the option] for each option that does not fit.
TOO_WIDE = """(arrow) => [...document.querySelectorAll('select')]
  .filter((s) => s.offsetParent).flatMap((s) => {
  const style = getComputedStyle(s);
  const pen = document.createElement('canvas').getContext('2d');
  pen.font = `${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
  return [...s.options].map((o) => [s.name, s.clientWidth, Math.ceil(pen.measureText(o.text).width), o.text])
    .filter(([, width, text]) => text + arrow > width);
})"""

# A phone's narrow topic filter may cut a long topic's title (the open list shows it whole); the
# menus whose choice is a short name must not.
PAGES = {"desktop": ["/calculator", "/cards", "/quiz", "/mock"], "phone": ["/calculator", "/quiz", "/mock"]}


@pytest.mark.parametrize("width", list(WIDTHS))
def test_every_menu_shows_its_whole_choice(browser, live_server: str, width: str) -> None:  # type: ignore[no-untyped-def]
    context, page = page_at(browser, live_server, width)
    try:
        for path in PAGES[width]:
            page.goto(path)
            expect(page.locator("main")).to_be_visible()
            assert page.evaluate(TOO_WIDE, ARROW_PX) == [], f"{path} at {width}: a menu cuts its choice"
        page.goto("/calculator")
        page.get_by_label("Model").select_option(label="My config.json (paste below)")
        expect(page.get_by_label("Model")).to_have_value("custom")
        assert page.evaluate(TOO_WIDE, ARROW_PX) == []
        page.get_by_label("Model").select_option(index=0)  # a change recalculates: the page reloads
        expect(page).to_have_url(re.compile(r"model="))
        page.get_by_label("GPU").select_option(label="A100 SXM 80GB")
        expect(page).to_have_url(re.compile(r"gpu=a100"))
        expect(page.get_by_label("GPU")).to_have_value(re.compile("a100"))
        assert page.evaluate(TOO_WIDE, ARROW_PX) == []
        screenshot(page, f"calculator-menus-{width}")
    finally:
        context.close()


# Pairs of captions side by side in one form (or fieldset, or the calculator's grid) whose tops
# differ by a few pixels: a misalignment, where a real row break would be a line's height or more.
MISALIGNED = """() => {
  const out = [];
  for (const form of document.querySelectorAll('form, fieldset, .calc-grid')) {
    const labels = [...form.querySelectorAll(':scope > label, :scope > div > label')]
      .filter((l) => l.offsetParent);
    labels.forEach((a, i) => labels.slice(i + 1).forEach((b) => {
      const [ra, rb] = [a.getBoundingClientRect(), b.getBoundingClientRect()];
      const apart = Math.abs(ra.top - rb.top);
      if (apart > 0.5 && apart < 8 && Math.abs(ra.left - rb.left) > 5)
        out.push([a.textContent.trim().split(/\\s+/)[0], b.textContent.trim().split(/\\s+/)[0], apart]);
    }));
  }
  return out;
}"""


@pytest.mark.parametrize("width", list(WIDTHS))
def test_captions_side_by_side_line_up(browser, live_server: str, width: str) -> None:  # type: ignore[no-untyped-def]
    context, page = page_at(browser, live_server, width)
    try:
        for path in ("/cards", "/quiz", "/mock", "/calculator"):
            page.goto(path)
            expect(page.locator("main")).to_be_visible()
            assert page.evaluate(MISALIGNED) == [], f"{path} at {width}: captions in one row do not line up"
        # The card filters as a person leaves them after a search: typed words, "All topics" kept.
        page.goto("/cards")
        page.get_by_role("searchbox", name="Search", exact=True).fill("cache")
        page.get_by_role("button", name="Filter").click()
        expect(page).to_have_url(re.compile(r"q=cache"))
        assert page.evaluate(MISALIGNED) == []
    finally:
        context.close()

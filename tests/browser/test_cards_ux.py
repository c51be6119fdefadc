"""The card pages as a person walks them, at a desktop width and a phone's (issue 15 item 11):
Previous/Next within the filtered list and back to it, each card's new/due status after a real
quiz review, sources that link their papers, the skip link, and a visible focus ring.
Screenshots go to test-artifacts/cards-*.png.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import expect

from app.services.clock import ManualClock
from tests.browser.conftest import WIDTHS, page_at, screenshot, watch_csp

pytestmark = pytest.mark.browser

TOPIC = "Why a decode step needs no mask"  # three cards, so the second has both neighbours
TOPIC_SLUG = "decode-no-mask"


@pytest.fixture(params=list(WIDTHS))
def screen(
    request: pytest.FixtureRequest, browser, clocked_server
) -> Iterator[tuple[object, str, ManualClock]]:  # type: ignore[no-untyped-def]
    """A fresh visitor's page at the viewport's size (its own guest), the viewport's name, the clock."""
    base, clock = clocked_server
    context, page = page_at(browser, base, request.param)
    violations = watch_csp(page)
    yield page, request.param, clock
    context.close()
    assert violations == [], "the Content-Security-Policy blocked something a page needs"


def _filter_by_topic(page) -> list[str]:  # type: ignore[no-untyped-def]
    page.goto("/cards")
    filters = page.get_by_role("search", name="Filter cards")
    filters.get_by_label("Topic").select_option(TOPIC_SLUG)
    filters.get_by_role("button", name="Filter").click()
    expect(page).to_have_url(re.compile(f"topic={TOPIC_SLUG}"))
    titles = page.locator(".card-item a").all_inner_texts()
    assert len(titles) >= 3, titles
    return titles


def test_previous_and_next_within_the_filtered_list(screen) -> None:  # type: ignore[no-untyped-def]
    page, name, _ = screen
    titles = _filter_by_topic(page)
    page.get_by_role("link", name=titles[1], exact=True).click()
    heading = page.get_by_role("heading", level=1)
    expect(heading).to_have_text(titles[1])
    nav = page.get_by_role("navigation", name="Previous and next card")
    expect(nav).to_contain_text(f"Card 2 of {len(titles)} in your list (topic {TOPIC})")
    screenshot(page, f"cards-neighbours-{name}")

    nav.get_by_role("link", name=re.compile("^Next")).click()
    expect(heading).to_have_text(titles[2])
    expect(nav).to_contain_text(f"Card 3 of {len(titles)} in your list")
    nav.get_by_role("link", name=re.compile("^Previous")).click()
    expect(heading).to_have_text(titles[1])
    nav.get_by_role("link", name=re.compile("^Previous")).click()
    expect(heading).to_have_text(titles[0])
    expect(nav.get_by_role("link", name=re.compile("^Previous"))).to_have_count(0)  # the first card

    # Back to the list: the filter is still set, the same cards in the same order.
    nav.get_by_role("link", name="Back to the list").click()
    expect(page).to_have_url(re.compile(f"/cards\\?topic={TOPIC_SLUG}"))
    expect(page.get_by_role("search", name="Filter cards").get_by_label("Topic")).to_have_value(TOPIC_SLUG)
    assert page.locator(".card-item a").all_inner_texts() == titles

    # A plain visit (a link from elsewhere) walks the card's topic, and says so.
    page.goto("/cards/why-decode-needs-no-mask")
    expect(nav).to_contain_text(f"in the topic {TOPIC}")
    expect(nav.get_by_role("link", name="All cards in this topic")).to_be_visible()
    if name == "phone":
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= WIDTHS["phone"][0], f"the card page scrolls sideways: {width}px"


def _statuses(page) -> dict[str, str]:  # type: ignore[no-untyped-def]
    items = page.locator(".card-item")
    return {
        items.nth(i).locator("a").inner_text(): items.nth(i).locator(".card-status").inner_text()
        for i in range(items.count())
    }


def test_new_then_due_after_a_review_in_the_quiz(screen) -> None:  # type: ignore[no-untyped-def]
    page, name, clock = screen
    _filter_by_topic(page)
    assert set(_statuses(page).values()) == {"new"}  # a visitor who has reviewed nothing

    # One card reviewed in a quiz, as a person does it: reveal, then Again.
    page.goto("/quiz")
    form = page.get_by_role("form", name="Start a quiz")
    form.get_by_label(TOPIC).check()
    for other in ("Multiple choice", "Numeric problems"):
        form.get_by_label(other).uncheck()
    form.get_by_label("Cards").fill("1")
    form.get_by_role("button", name="Start the quiz").click()
    reviewed = page.get_by_role("heading", level=1).inner_text()
    page.get_by_role("button", name=re.compile("Reveal")).click()
    page.locator(".rating-buttons button[data-key='1']").click()
    expect(page.locator(".flash")).to_contain_text("Again, due again in 1 min")

    _filter_by_topic(page)
    status = _statuses(page)
    assert status.pop(reviewed) == "learning" and set(status.values()) == {"new"}
    clock.advance(120)  # Again's learning step is a minute
    page.reload()
    status = _statuses(page)
    assert status.pop(reviewed) == "due" and set(status.values()) == {"new"}
    expect(page.locator(".card-item", has_text=reviewed).locator(".card-status")).to_have_attribute(
        "title", "Due for review now"
    )
    screenshot(page, f"cards-status-due-{name}")


def test_a_source_with_an_arxiv_id_links_the_paper(screen) -> None:  # type: ignore[no-untyped-def]
    page, name, _ = screen
    page.goto("/cards/what-the-cache-stores")
    page.get_by_role("button", name="Reveal the strong answer").click()
    link = page.locator(".sources").get_by_role("link", name="arXiv:1706.03762")
    expect(link).to_be_visible()
    expect(link).to_have_attribute("href", "https://arxiv.org/abs/1706.03762")
    expect(link).to_have_attribute("rel", re.compile(r"\bnoopener\b"))
    expect(page.locator(".sources li").first).to_contain_text(
        "Vaswani et al., 2017, Attention Is All You Need"
    )
    screenshot(page, f"cards-sources-{name}")


def _luminance(rgb: str) -> float:
    channels = [int(c) / 255 for c in re.findall(r"\d+", rgb)[:3]]
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def _contrast(a: str, b: str) -> float:
    la, lb = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


RING = """(el) => { const s = getComputedStyle(el);
  return {style: s.outlineStyle, width: parseFloat(s.outlineWidth), color: s.outlineColor,
          page: getComputedStyle(document.documentElement).backgroundColor}; }"""


def _assert_ring(page, selector: str = ":focus") -> None:  # type: ignore[no-untyped-def]
    ring = page.locator(selector).evaluate(RING)
    what = page.evaluate("document.activeElement.outerHTML.slice(0, 80)")
    assert ring["style"] != "none" and ring["width"] >= 2, f"no focus ring on {what}: {ring}"
    assert _contrast(ring["color"], ring["page"]) >= 3, f"the ring on {what} is too faint: {ring}"


def _tab_to(page, test: str, limit: int = 60) -> None:  # type: ignore[no-untyped-def]
    for _ in range(limit):
        page.keyboard.press("Tab")
        if page.evaluate(f"(() => {{ const e = document.activeElement; return {test}; }})()"):
            return
    raise AssertionError(f"Tab never reached an element where {test}")


def test_skip_link_first_and_a_visible_focus_ring(screen) -> None:  # type: ignore[no-untyped-def]
    page, name, _ = screen
    page.goto("/cards")
    page.keyboard.press("Tab")
    skip = page.get_by_role("link", name="Skip to content")
    expect(skip).to_be_focused()
    box = skip.bounding_box()
    assert box is not None and box["y"] >= 0 and box["x"] >= 0, f"the focused skip link is off screen: {box}"
    _assert_ring(page)
    screenshot(page, f"cards-skip-link-{name}")
    page.keyboard.press("Enter")
    expect(page.locator("#main")).to_be_focused()
    # The next Tab starts inside the content: the filter form's search box, not the header.
    page.keyboard.press("Tab")
    expect(page.get_by_role("search", name="Filter cards").get_by_label("Search")).to_be_focused()
    _assert_ring(page)
    _tab_to(page, "e.tagName === 'SELECT'")
    _assert_ring(page)
    _tab_to(page, "e.tagName === 'BUTTON'")
    _assert_ring(page)
    _tab_to(page, "e.tagName === 'A' && e.closest('.card-item') !== null")
    _assert_ring(page)
    screenshot(page, f"cards-focus-ring-{name}")

    # Every page starts with it, and the card page's own button shows the ring too.
    page.goto("/cards/what-the-cache-stores")
    page.keyboard.press("Tab")
    expect(skip).to_be_focused()
    _tab_to(page, "e.id === 'reveal-answer'")
    _assert_ring(page)

    # The API docs page (Swagger UI, not the site's layout) starts with one too.
    page.goto("/docs")
    expect(page.locator(".swagger-ui .info .title")).to_be_visible()
    page.keyboard.press("Tab")
    expect(skip).to_be_focused()
    _assert_ring(page)
    page.keyboard.press("Enter")
    # Swagger UI keeps the focus on the link, but the next Tab starts inside the docs themselves.
    page.keyboard.press("Tab")
    assert page.evaluate("document.getElementById('main').contains(document.activeElement)")

    # The code editor: its frame shows the ring while the editor has focus.
    page.goto("/challenges/decode-step")
    page.keyboard.press("Tab")
    expect(skip).to_be_focused()
    page.locator(".editor-wrap .editor-host").click()
    _assert_ring(page, ".editor-wrap")
    screenshot(page, f"cards-editor-focus-{name}")

"""Where a person lands by a stale link or a typo (issue 22, polish): a card list page past the last
says so and links to the last page; an address with a NUL in it is a page, not JSON; /docs links
back to the site and names its operations; the settings page's "Change" does not link to itself.
At a desktop width and at a phone's.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import WIDTHS, page_at

pytestmark = pytest.mark.browser


@pytest.mark.parametrize("width", list(WIDTHS))
def test_stale_links_and_the_way_back(browser, live_server: str, width: str) -> None:  # type: ignore[no-untyped-def]
    context, page = page_at(browser, live_server, width)
    page.goto("/cards?page=99")
    past = page.locator("#past-the-last")
    expect(past).to_contain_text("Page 99 is past the last page")
    expect(page.get_by_text("No card matches")).to_have_count(0)
    past.get_by_role("link", name="Go to the last page").click()
    expect(page.locator(".pager [aria-current=page]")).to_be_visible()
    last = page.locator(".pager [aria-current=page]").inner_text()
    assert page.url.endswith(f"/cards?page={last}")
    expect(page.locator(".card-list .card-item").first).to_be_visible()

    response = page.goto("/cards/%00")
    assert response is not None and response.status == 422
    assert response.headers["content-type"].startswith("text/html")
    expect(page.get_by_role("heading", level=1)).to_have_text("This request was refused")
    page.get_by_role("link", name="Back to the home page").click()
    expect(page).to_have_url(live_server + "/")

    page.goto("/docs")
    expect(page.get_by_text("List and search the question cards")).to_be_visible()
    expect(page.get_by_text("Api List Cards")).to_have_count(0)
    page.get_by_role("link", name="← kvprep").click()
    expect(page).to_have_url(live_server + "/")

    page.goto("/settings")
    change = page.locator("#schedule-change")
    expect(change).to_have_text("Change them below")
    change.click()
    expect(page).to_have_url(live_server + "/settings#study-title")
    page.goto("/progress")
    page.locator("#schedule-change").click()
    expect(page).to_have_url(live_server + "/settings")
    context.close()

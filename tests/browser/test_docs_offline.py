"""/docs with no network beyond this server: Swagger UI comes from our own static files, renders the
API, and breaks no Content-Security-Policy rule; every page has an icon and asks for nothing that
404s. At a desktop width and at a phone's; screenshots in test-artifacts/.
"""

from __future__ import annotations

from urllib.parse import urlparse

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import WIDTHS, screenshot

pytestmark = pytest.mark.browser

PAGES = ["/", "/cards", "/challenges", "/quiz", "/mock", "/auth/signup", "/docs"]


@pytest.mark.parametrize("width", list(WIDTHS))
def test_docs_work_offline_and_no_page_misses_its_icon(browser, live_server: str, width: str) -> None:  # type: ignore[no-untyped-def]
    w, h = WIDTHS[width]
    context = browser.new_context(base_url=live_server, viewport={"width": w, "height": h})
    here = urlparse(live_server).netloc
    outside: list[str] = []

    def offline(route) -> None:  # type: ignore[no-untyped-def]
        if urlparse(route.request.url).netloc == here:
            route.continue_()
        else:  # as on a machine with no internet
            outside.append(route.request.url)
            route.abort()

    context.route("**/*", offline)
    page = context.new_page()
    page.set_default_timeout(20_000)
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("response", lambda r: problems.append(f"{r.status} {r.url}") if r.status >= 400 else None)

    page.goto("/")
    page.get_by_role("link", name="API").click()
    expect(page).to_have_url(f"{live_server}/docs")
    expect(page.locator(".swagger-ui .info .title")).to_contain_text("kvprep")
    # An operation from the schema, opened: the UI is live, not just painted.
    operation = page.locator(".opblock-summary-path", has_text="/api/cards").first
    expect(operation).to_be_visible()
    operation.click()
    expect(page.get_by_role("button", name="Try it out").first).to_be_visible()
    screenshot(page, f"docs-offline-{width}")

    for path in PAGES:
        page.goto(path)
        page.wait_for_load_state("load")
        icon = page.locator("link[rel=icon]")
        expect(icon).to_have_count(1)
        response = page.request.get(str(icon.get_attribute("href")))
        assert response.ok and "svg" in response.headers["content-type"], path
    assert page.request.get("/favicon.ico").ok

    assert outside == [], f"asked for the internet: {outside}"
    assert problems == [], f"errors, refusals or CSP violations: {problems}"
    context.close()

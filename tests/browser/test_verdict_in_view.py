"""After Submit, the verdict is where the person is looking: in the viewport, with focus on it, at
a desktop width and a phone's (it used to be drawn below the Run panel, off-screen at 1280x900,
so a Submit looked as if nothing happened). The challenges named in the report, clicked as a
person does: the starter code as it loads, the Submit button.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import screenshot

pytestmark = pytest.mark.browser

VIEWPORTS = {"desktop": {"width": 1280, "height": 900}, "phone": {"width": 390, "height": 844}}


@pytest.mark.parametrize("slug", ["decode-step", "paged-kv-cache"])
@pytest.mark.parametrize("name", list(VIEWPORTS))
def test_the_submit_verdict_appears_in_view_with_focus(
    browser, live_server: str, slug: str, name: str
) -> None:  # type: ignore[no-untyped-def]
    phone = name == "phone"
    context = browser.new_context(
        base_url=live_server, viewport=VIEWPORTS[name], is_mobile=phone, has_touch=phone
    )
    page = context.new_page()
    page.set_default_timeout(15_000)
    page.goto(f"/challenges/{slug}")
    expect(page.locator(".cm-content")).to_be_visible()
    page.get_by_role("button", name="Submit", exact=True).click()
    results = page.locator("#results")
    expect(page.locator("#verdict")).to_have_class("verdict-banner failed", timeout=30_000)
    expect(results).to_be_focused()
    box = results.bounding_box()
    assert box is not None
    height = VIEWPORTS[name]["height"]
    assert 0 <= box["y"] < height - 60, f"the verdict starts at y={box['y']:.0f}, outside the window"
    expect(page.locator("#verdict-summary")).to_be_in_viewport()
    screenshot(page, f"challenge-verdict-in-view-{slug}-{name}")
    context.close()

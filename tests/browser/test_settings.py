"""The settings page clicked through at a desktop width and at a phone's (390x844): a refused
interview date keeps what was typed and says why beside the field; saved settings show beside the
due counts on the quiz page and the dashboard; too few reviews for a fit is said. Screenshots saved."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import WIDTHS, page_at, screenshot, watch_csp

pytestmark = pytest.mark.browser


@pytest.mark.parametrize("width", list(WIDTHS))
def test_study_settings_and_personal_scheduling(browser, live_server: str, width: str) -> None:  # type: ignore[no-untyped-def]
    context, page = page_at(browser, live_server, width)
    violations = watch_csp(page)

    page.goto("/progress")
    page.get_by_role("link", name="study settings").click()
    expect(page.get_by_role("heading", name="Study settings")).to_be_visible()
    expect(page.locator("#parameters-kind")).to_contain_text("FSRS's defaults")
    expect(page.locator("#too-few")).to_contain_text("512 more")
    expect(page.get_by_role("button", name="Fit my parameters")).to_be_disabled()

    form = page.locator("form.study-form")
    past = (datetime.now(UTC).date() - timedelta(days=3)).isoformat()
    form.get_by_label("Retention target (%)").fill("85")
    form.get_by_label("Interview date (optional)").fill(past)
    form.get_by_role("button", name="Save settings").click()
    expect(page.locator("#interview-error")).to_contain_text("That day has passed")
    expect(form.get_by_label("Interview date (optional)")).to_have_value(past)
    expect(form.get_by_label("Retention target (%)")).to_have_value("85")
    screenshot(page, f"settings-refused-{width}")

    interview = (datetime.now(UTC).date() + timedelta(days=20)).isoformat()
    form.get_by_label("Interview date (optional)").fill(interview)
    form.get_by_role("button", name="Save settings").click()
    expect(page.locator(".flash")).to_contain_text("Settings saved.")
    screenshot(page, f"settings-saved-{width}")

    for path in ("/quiz", "/progress"):
        page.goto(path)
        line = page.locator("#schedule-line")
        expect(line).to_contain_text("85% recall")
        expect(line).to_contain_text(f"interview on {interview} (in 20 days)")
        expect(line).to_contain_text("FSRS's default parameters")
        screenshot(page, f"settings-line{path.replace('/', '-')}-{width}")
    page.locator("#schedule-line").get_by_role("link", name="Change").click()
    expect(page).to_have_url(f"{live_server}/settings")
    context.close()
    assert violations == []

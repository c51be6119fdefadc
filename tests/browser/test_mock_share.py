"""Mock set-up and sharing as a person uses them: each length says how many questions it asks and
that the coding problem is in it; the report's share panel copies its link; a revoked link says it
was revoked. At a desktop width and at a phone's; screenshots in test-artifacts/.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from app.config import Settings
from app.services.mock import LENGTHS, plan_questions
from tests.browser.conftest import WIDTHS, screenshot

pytestmark = pytest.mark.browser

TOPIC = "Why a decode step needs no mask"
SETTINGS = Settings()


@pytest.mark.parametrize("width", list(WIDTHS))
def test_mock_setup_plans_and_a_revoked_share_link(browser, live_server: str, width: str) -> None:  # type: ignore[no-untyped-def]
    w, h = WIDTHS[width]
    context = browser.new_context(base_url=live_server, viewport={"width": w, "height": h})
    context.grant_permissions(["clipboard-read", "clipboard-write"])
    page = context.new_page()
    page.set_default_timeout(15_000)

    page.goto("/")
    page.get_by_role("link", name="Mock").first.click()
    for n in LENGTHS:
        with_c = plan_questions(minutes=n, with_challenge=True, settings=SETTINGS)
        without = plan_questions(minutes=n, with_challenge=False, settings=SETTINGS)
        assert with_c < without  # the coding problem takes time from the questions
        expect(page.locator(f"#plan-{n}")).to_have_text(
            f"{with_c} questions and the coding problem, or {without} without it"
        )
    expect(page.locator("#plan-rule")).to_contain_text(f"{SETTINGS.mock_challenge_minutes:.0f}")
    screenshot(page, f"mock-setup-plans-{width}")

    # A one-question interview, ended and scored, to reach the report.
    page.get_by_label("Custom", exact=True).check()
    page.get_by_label("Custom length in minutes").fill("3")
    page.get_by_label(TOPIC).check()
    page.get_by_label("Include a coding problem").uncheck()
    page.get_by_role("button", name="Start the interview").click()
    page.get_by_label("Your answer").fill("One query, every key in its past.")
    page.get_by_role("button", name="Answer", exact=True).click()
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="End the interview").click()
    page.get_by_role("button", name="See my report").click()
    expect(page.get_by_role("heading", name="Your report")).to_be_visible()

    page.get_by_role("button", name="Create a read-only link").click()
    link = page.locator("#share-url").input_value()
    page.get_by_role("button", name="Copy link").click()
    expect(page.locator("#copy-status")).to_have_text("Copied.")
    assert page.evaluate("navigator.clipboard.readText()") == link
    screenshot(page, f"mock-share-copied-{width}")

    visitor = browser.new_context(viewport={"width": w, "height": h}).new_page()
    visitor.goto(link)
    expect(visitor.get_by_role("heading", name="A mock interview report")).to_be_visible()

    page.get_by_role("button", name="Revoke the link").click()
    expect(page.locator(".flash")).to_contain_text("revoked")
    visitor.reload()
    expect(visitor.get_by_role("heading", level=1)).to_have_text("Link revoked")
    expect(visitor.locator(".error-detail")).to_contain_text("revoked by the report's owner")
    screenshot(visitor, f"mock-share-revoked-{width}")
    # A link that never existed still says only that nothing is there.
    visitor.goto(link[:-4] + "zzzz")
    expect(visitor.get_by_role("heading", level=1)).to_have_text("Not found")
    visitor.context.close()
    context.close()

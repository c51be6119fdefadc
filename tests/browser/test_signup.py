"""Sign-up as a person fills it in: the password rule stated before typing, every field's problem
at once, an over-long password answered in the form with the email kept, then a good sign-up.
At a desktop width and at a phone's; screenshots in test-artifacts/.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from app.config import Settings
from tests.browser.conftest import WIDTHS, page_at, screenshot

pytestmark = pytest.mark.browser

SETTINGS = Settings()


@pytest.mark.parametrize("width", list(WIDTHS))
def test_sign_up_errors_all_at_once_and_the_email_kept(browser, live_server: str, width: str) -> None:  # type: ignore[no-untyped-def]
    context, page = page_at(browser, live_server, width)
    page.goto("/")
    page.get_by_role("link", name="Sign up").click()

    # The rule is on the page before anything is typed, tied to the field.
    rule = page.locator("#password-rule")
    expect(rule).to_contain_text(
        f"From {SETTINGS.password_min_length} to {SETTINGS.password_max_length} characters"
    )
    expect(page.get_by_label("Password", exact=True)).to_have_attribute("aria-describedby", "password-rule")

    # Three mistakes in one submission: all three come back, each beside its field.
    page.get_by_label("Email").fill("not-an-email")
    page.get_by_label("Password", exact=True).fill("short")
    page.get_by_label("Password again").fill("shorter")
    page.get_by_role("button", name="Create my account").click()
    expect(page.locator("#signup-errors")).to_have_text("Fix the 3 fields below.")
    expect(page.locator("#email-error")).to_contain_text("email address")
    expect(page.locator("#password-error")).to_contain_text(f"at least {SETTINGS.password_min_length}")
    expect(page.locator("#confirm-error")).to_contain_text("differ")
    expect(page.get_by_label("Email")).to_have_value("not-an-email")
    screenshot(page, f"signup-all-errors-{width}")

    # A password far past the limit (and past any form-field bound): a message, not the 422 page.
    email = f"long-password-{width}@example.com"
    long_password = "correct horse battery staple " * 60  # 1,740 characters
    page.get_by_label("Email").fill(email)
    page.get_by_label("Password", exact=True).fill(long_password)
    page.get_by_label("Password again").fill(long_password)
    page.get_by_role("button", name="Create my account").click()
    expect(page.get_by_role("heading", name="Sign up")).to_be_visible()
    expect(page.locator("#password-error")).to_contain_text(f"at most {SETTINGS.password_max_length}")
    expect(page.locator("#password-error")).to_contain_text(f"{len(long_password):,}")
    expect(page.locator("#email-error")).to_have_count(0)
    expect(page.locator("#confirm-error")).to_have_count(0)
    expect(page.get_by_label("Email")).to_have_value(email)
    screenshot(page, f"signup-long-password-{width}")

    # Fixed, it goes through.
    page.get_by_label("Password", exact=True).fill("a long enough password")
    page.get_by_label("Password again").fill("a long enough password")
    page.get_by_role("button", name="Create my account").click()
    expect(page.locator(".flash")).to_contain_text("Your account is ready")
    expect(page.locator(".account-email")).to_have_text(email)
    context.close()

"""Every page type at 390x844 (a phone): no sideways scroll, every navigation link on screen and
clickable, a compact header, and no Content-Security-Policy violation. Screenshots go to
test-artifacts/phone-*.png.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import WIDEST, screenshot, watch_csp

pytestmark = pytest.mark.browser

WIDTH, HEIGHT = 390, 844
MAIN_LINKS = ["Topics", "Cards", "Challenges", "Quiz", "Mock", "Lab", "Calculator", "Progress"]
# The header may take at most this much of the 844 px screen (it took ~250 px before).
HEADER_MAX_PX = 100


def check_page(page, name: str) -> None:  # type: ignore[no-untyped-def]
    page.wait_for_load_state("load")
    scroll_width = page.evaluate("document.documentElement.scrollWidth")
    body_width = page.evaluate("document.body.scrollWidth")
    if scroll_width > WIDTH or body_width > WIDTH:
        wide = page.evaluate(WIDEST, WIDTH)
        raise AssertionError(f"{name} scrolls sideways: {scroll_width}px; too wide: {wide}")
    header = page.locator(".site-header").bounding_box()
    assert header is not None and header["height"] <= HEADER_MAX_PX, f"{name}: header {header}"
    nav = page.get_by_role("navigation", name="Main")
    account = page.get_by_role("navigation", name="Account")
    links = [nav.get_by_role("link", name=re.compile(f"^{label}")) for label in MAIN_LINKS]
    # Every link the bar holds, not only the ones named above: none may render 0x0.
    assert nav.get_by_role("link").count() == len(MAIN_LINKS), name
    links += [nav.get_by_role("link").nth(i) for i in range(len(MAIN_LINKS))]
    links += [account.get_by_role("link").nth(i) for i in range(account.get_by_role("link").count())]
    for link in links:
        expect(link).to_be_visible()
        box = link.bounding_box()
        assert box is not None, name
        # On screen, wide enough to tap (WCAG 2.5.8 asks for 24 px), and not covered by anything.
        assert box["x"] >= 0 and box["x"] + box["width"] <= WIDTH, f"{name}: {link} at {box}"
        assert box["height"] >= 24 or box["width"] >= 24, f"{name}: {link} is too small to tap: {box}"
        link.click(trial=True)
    screenshot(page, f"phone-{name}")


def test_every_page_type_fits_a_phone(browser, live_server: str) -> None:  # type: ignore[no-untyped-def]
    context = browser.new_context(
        base_url=live_server, viewport={"width": WIDTH, "height": HEIGHT}, is_mobile=True, has_touch=True
    )
    page = context.new_page()
    page.set_default_timeout(15_000)
    violations = watch_csp(page)

    page.goto("/")
    check_page(page, "home")
    # The navigation works from the phone: a tap on a main link opens its page.
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Topics").click()
    expect(page).to_have_url(re.compile(r"/topics$"))
    check_page(page, "topics")
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Cards").click()
    check_page(page, "card-list")
    page.locator(".card-item a").first.click()
    expect(page.locator(".study-card")).to_be_visible()
    page.get_by_role("button", name="Reveal the strong answer").click()
    check_page(page, "card")
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Challenges").click()
    check_page(page, "challenges")
    page.locator("main a[href^='/challenges/']").first.click()
    expect(page.locator(".cm-content")).to_be_visible()  # CodeMirror runs under the CSP
    check_page(page, "challenge")

    page.get_by_role("navigation", name="Account").get_by_role("link", name="Sign up").click()
    check_page(page, "signup")
    page.get_by_label("Email").fill("phone@example.com")
    page.get_by_label("Password", exact=True).fill("correct horse battery")
    page.get_by_label("Password again").fill("correct horse battery")
    page.get_by_role("button", name="Create my account").click()
    expect(page.get_by_role("navigation", name="Account")).to_contain_text("phone@example.com")
    check_page(page, "home-signed-in")

    page.get_by_role("navigation", name="Main").get_by_role("link", name="Quiz").click()
    check_page(page, "quiz-setup")
    page.get_by_role("button", name="Start the quiz").click()
    expect(page).to_have_url(re.compile(r"/quiz/\d+/items/0$"))
    check_page(page, "quiz-item")

    page.get_by_role("navigation", name="Main").get_by_role("link", name=re.compile("^Mock")).click()
    check_page(page, "mock-setup")
    page.get_by_label("Include a coding problem").uncheck()
    page.get_by_role("button", name="Start the interview").click()
    expect(page.locator("#clock")).to_be_visible()
    check_page(page, "mock-run")
    page.once("dialog", lambda dialog: dialog.accept())  # "End the interview now?"
    page.get_by_role("button", name="End the interview").click()
    expect(page.get_by_role("heading", name="Score your answers")).to_be_visible()
    check_page(page, "mock-score")
    page.get_by_role("button", name="See my report").click()
    expect(page.get_by_role("heading", name="Your report")).to_be_visible()
    check_page(page, "mock-report")

    page.get_by_role("navigation", name="Main").get_by_role("link", name="Lab").click()
    check_page(page, "lab")
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Calculator").click()
    expect(page.locator("#calc-results")).to_be_visible()
    check_page(page, "calculator")

    page.get_by_role("navigation", name="Main").get_by_role("link", name="Progress").click()
    check_page(page, "progress")
    page.get_by_role("navigation", name="Account").get_by_role("link", name="phone@example.com").click()
    expect(page.get_by_role("heading", level=1)).to_be_visible()
    check_page(page, "account")
    # Change the password from the phone: the page comes back signed in, with the news.
    form = page.locator("form[action='/account/password']")
    form.get_by_label("Current password").fill("correct horse battery")
    form.get_by_label("New password", exact=True).fill("a different horse staple")
    form.get_by_label("New password again").fill("a different horse staple")
    form.get_by_role("button", name="Change password").click()
    expect(page.get_by_role("status")).to_contain_text("Password changed")
    expect(page.get_by_role("navigation", name="Account")).to_contain_text("phone@example.com")
    page.get_by_role("navigation", name="Account").get_by_role("button", name="Log out").click()
    expect(page.get_by_role("navigation", name="Account")).to_contain_text("Log in")
    page.get_by_role("navigation", name="Account").get_by_role("link", name="Log in").click()
    check_page(page, "login")

    assert violations == [], violations
    context.close()

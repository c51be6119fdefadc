"""A short mock interview in Chromium: an answer, its follow-up, a reload, the coding problem graded,
the deadline reached, the scoring, the report, and its read-only link.

The server runs in this process (uvicorn in a thread) so the test can move its clock: the
interview's clock is the server's (a ticking ManualClock), and Playwright's clock moves the
page's countdown by the same amount, so the deadline comes without waiting for it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import expect

from app.config import ROOT, Settings
from app.db import migrate
from app.main import create_app
from app.services.clock import ManualClock
from graders.runner import shutdown as shutdown_sandbox
from tests.browser.conftest import screenshot, serve_in_thread, watch_csp

pytestmark = pytest.mark.browser

TOPIC = "Why a decode step needs no mask"  # no numeric problems: one spoken question


@pytest.fixture(scope="module")
def mock_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, ManualClock]]:
    url = f"sqlite:///{tmp_path_factory.mktemp('mock-live') / 'kvprep.sqlite3'}"
    migrate(url)
    app = create_app(Settings(database_url=url, grading_workers=1, embedded_queue="memory"))
    clock = ManualClock(ticking=True)
    app.state.clock = clock
    with serve_in_thread(app, "the mock-interview test server") as base:
        yield base, clock
    # The fork server the grading worker started belongs to this test process: stop it, as the
    # subprocess servers' exit does, so later tests start from a process without one.
    shutdown_sandbox()


def test_a_short_mock_interview_end_to_end(browser, mock_server) -> None:  # type: ignore[no-untyped-def]
    base, clock = mock_server
    context = browser.new_context(base_url=base, viewport={"width": 1200, "height": 900})
    page = context.new_page()
    page.set_default_timeout(15_000)
    violations = watch_csp(page)
    page.clock.install()

    # Set up: a custom two-minute interview on one topic, with a coding problem.
    page.goto("/")
    page.get_by_role("link", name="Mock interview").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Mock interview")
    page.get_by_label("Custom", exact=True).check()
    page.get_by_label("Custom length in minutes").fill("2")
    page.get_by_label(TOPIC).check()
    expect(page.get_by_label("Include a coding problem")).to_be_checked()
    screenshot(page, "mock-setup")
    page.get_by_role("button", name="Start the interview").click()

    # The first question, with the server's countdown.
    expect(page.locator(".mock-progress")).to_contain_text("Question 1 of 1")
    expect(page.locator("#clock")).to_have_text(re.compile(r"^(2:00|1:5\d)$"))
    page.get_by_label("Your answer").fill(
        "A decode step has one new query, and every key in the cache is in its past, so nothing needs hiding."
    )
    screenshot(page, "mock-question")
    page.get_by_role("button", name="Answer", exact=True).click()

    # The interviewer follows up before moving on; a reload keeps the question and the time.
    expect(page.get_by_text("Interviewer, digging deeper:")).to_be_visible()
    remaining = float(page.locator("#mock").get_attribute("data-remaining") or 0)
    page.get_by_label("Your answer").fill("A draft that survives the reload")
    page.reload()
    expect(page.get_by_text("Interviewer, digging deeper:")).to_be_visible()
    after = float(page.locator("#mock").get_attribute("data-remaining") or 0)
    assert 0 <= remaining - after < 10, (remaining, after)  # the clock kept running; it did not restart
    expect(page.get_by_label("Your answer")).to_have_value("A draft that survives the reload")
    page.get_by_label("Your answer").fill(
        "With chunked prefill or speculative decoding several new queries need the mask."
    )
    page.get_by_role("button", name="Answer", exact=True).click()

    # The coding problem, graded by the grader inside the same clock.
    coding = page.locator(".mock-coding")
    expect(coding).to_be_visible()
    slug = coding.get_attribute("data-slug")
    solution = (ROOT / "questions" / "challenges" / str(slug) / "solution.py").read_text()
    editor = page.locator(".cm-content")
    expect(editor).to_be_visible()
    editor.click()
    page.keyboard.press("Control+A")
    page.keyboard.insert_text(solution)
    page.get_by_role("button", name="Submit", exact=True).click()
    expect(page.locator("#verdict")).to_have_class("verdict-banner passed", timeout=60_000)
    expect(page.locator("#attempts li.pass")).to_have_count(1)
    screenshot(page, "mock-coding-passed")

    # The deadline: the server's clock and the page's both move past it; the interview closes itself.
    clock.advance(150)
    page.clock.fast_forward("02:30")
    expect(page.get_by_role("heading", name="Score your answers")).to_be_visible()
    expect(page.locator("#ended-by")).to_contain_text("Time is up")
    expect(page.locator("#coding-verdict")).to_contain_text("Passed")

    # Scoring: tick the key points covered and the follow-up.
    page.locator("input[name='kp-0']").nth(0).check()
    page.locator("input[name='kp-0']").nth(1).check()
    page.locator("input[name='fu-0']").check()
    screenshot(page, "mock-scoring")
    page.get_by_role("button", name="See my report").click()

    # The report: score per topic, time per question, answers beside strong answers, what to review.
    expect(page.get_by_role("heading", name="Your report")).to_be_visible()
    expect(page.locator("#overall-score")).to_have_text(re.compile(r"^\d+%$"))
    expect(page.locator("#topic-scores")).to_contain_text(TOPIC)
    expect(page.locator("#topic-scores")).to_contain_text("Coding:")
    expect(page.locator("#q1")).to_contain_text("every key in the cache is in its past")
    expect(page.locator("#q1 .mock-time")).to_contain_text("Time:")
    expect(page.locator("#q1 .covered-list li.got")).to_have_count(2)
    expect(page.locator("#coding-verdict")).to_contain_text("Passed")
    expect(page.locator("#review")).to_be_visible()
    screenshot(page, "mock-report")

    # A read-only link to the report, for someone else.
    page.get_by_role("button", name="Create a read-only link").click()
    link = page.locator("#share-url").input_value()
    assert "/mock/shared/" in link
    visitor = browser.new_context(viewport={"width": 1200, "height": 900}).new_page()
    visitor.goto(link)
    expect(visitor.get_by_role("heading", name="A mock interview report")).to_be_visible()
    expect(visitor.locator("#q1")).to_contain_text("every key in the cache is in its past")
    expect(visitor.get_by_role("button", name="Revoke the link")).to_have_count(0)
    visitor.context.close()
    context.close()
    assert violations == []  # the editor, the clock and the report all ran under the CSP

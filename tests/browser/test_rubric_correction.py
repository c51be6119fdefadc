"""The report's rubric as a person uses it: a one-question mock answered with the real controls,
ended, scored; the rubric shows five signals with their evidence; one rating corrected through its
form stays corrected after a reload, the computed one beside it; the debrief's "Try this question
again" starts a one-question mock on the same card. At a desktop width and a phone's;
screenshots in test-artifacts/.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import WIDTHS, assert_no_sideways_scroll, page_at, screenshot, watch_csp

pytestmark = pytest.mark.browser

TOPIC = "Why a decode step needs no mask"  # no numeric problems: one spoken question


@pytest.mark.parametrize("width", list(WIDTHS))
def test_a_rubric_rating_corrected_on_the_report_is_kept(browser, live_server: str, width: str) -> None:  # type: ignore[no-untyped-def]
    context, page = page_at(browser, live_server, width)
    violations = watch_csp(page)
    page.goto("/")
    page.get_by_role("link", name="Mock").first.click()
    page.get_by_label("Custom", exact=True).check()
    page.get_by_label("Custom length in minutes").fill("3")
    page.get_by_label(TOPIC).check()
    page.get_by_label("Include a coding problem").uncheck()
    page.get_by_role("button", name="Start the interview").click()
    page.get_by_label("Your answer").fill("One new query, and every key in the cache is in its past.")
    page.get_by_role("button", name="Answer", exact=True).click()
    expect(page.get_by_text("Interviewer, digging deeper:")).to_be_visible()
    page.get_by_label("Your answer").fill("I think chunked prefill needs the mask, but one query does not.")
    page.get_by_role("button", name="Answer", exact=True).click()

    # The last answer stops the clock: score it.
    expect(page.get_by_role("heading", name="Score your answers")).to_be_visible()
    page.locator("input[name='kp-0']").nth(0).check()
    page.locator("input[name='fu-0']").check()
    page.get_by_role("button", name="See my report").click()
    expect(page.get_by_role("heading", name="Your report")).to_be_visible()

    rubric = page.locator("#q1 .mock-rubric")
    expect(rubric.locator(".rubric-signal")).to_have_count(5)
    expect(page.locator("#rubric-rule")).to_contain_text("Correct counted twice")
    clear = rubric.locator("[data-signal='clear']")
    expect(clear).to_contain_text("hedged: “i think”")  # the answer's own words, as evidence
    computed = int(clear.locator(".signal-rating").get_attribute("data-rating") or 0)
    assert computed in {1, 2, 3}  # a hedge costs a point
    mine = computed + 1
    expect(clear.locator(".badge.corrected")).to_have_count(0)
    assert_no_sideways_scroll(page, f"the report with its rubric at {width}")

    clear.get_by_text("Correct this rating").click()
    clear.get_by_label("Your rating of Clear").select_option(str(mine))
    clear.get_by_role("button", name="Keep my rating").click()
    expect(page.locator(".flash")).to_contain_text("marked as corrected")
    screenshot(page, f"mock-rubric-corrected-{width}")

    page.reload()
    clear = page.locator("#q1 .mock-rubric [data-signal='clear']")
    expect(clear.locator(".signal-rating")).to_have_attribute("data-rating", str(mine))
    expect(clear.locator(".badge.corrected")).to_have_text("corrected")
    expect(clear.locator(".computed")).to_have_text(f"(computed {computed}/4)")

    # The debrief: each missed point's strong wording beside the closest the answer came, and a retry.
    debrief = page.locator("#q1 .mock-debrief")
    expect(debrief.locator(".debrief-point").first).to_contain_text("Strong answer, key point 2")
    title = page.locator("#q1 h3 a").inner_text()
    debrief.get_by_role("button", name="Try this question again").click()
    expect(page.locator(".mock-progress")).to_contain_text("Question 1 of 1")
    expect(page.get_by_label("Your answer")).to_be_visible()
    screenshot(page, f"mock-retry-{width}")
    # It asks that card: ending it at once shows the same card to score.
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="End the interview").click()
    expect(page.get_by_role("heading", name="Score your answers")).to_be_visible()
    expect(page.locator(".mock-score-item h2")).to_contain_text(title)
    context.close()
    assert violations == []

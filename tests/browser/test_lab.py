"""The lab and the calculator as a person uses them: the real controls, the progress bar, the charts."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import screenshot, watch_csp

pytestmark = pytest.mark.browser


def chart_drawn(page, canvas_id: str) -> None:  # type: ignore[no-untyped-def]
    """Wait until Chart.js (a deferred script) has drawn on the canvas."""
    page.wait_for_function(
        f"() => !!window.KvCharts && !!window.KvCharts.Chart.getChart(document.getElementById('{canvas_id}'))"
    )


def test_run_a_tiny_lab_experiment_and_see_progress_and_chart(page) -> None:  # type: ignore[no-untyped-def]
    violations = watch_csp(page)
    page.goto("/")
    page.get_by_role("link", name="Lab", exact=True).click()
    form = page.get_by_role("form", name="Start a lab run")
    form.get_by_label("A tiny model").check()
    form.get_by_label(re.compile("Prefill time against prompt length")).check()
    form.get_by_label(re.compile("Greedy tokens identical")).check()
    form.get_by_role("button", name="Run the lab").click()
    # The run page shows a progress bar while the job is queued or running...
    expect(page).to_have_url(re.compile(r"/lab/runs/[0-9a-f]+$"))
    expect(page.locator("#lab-progress")).to_be_visible()
    screenshot(page, "lab-progress")
    # ...then the results, with the chart drawn by Chart.js.
    expect(page.locator("#lab-status")).to_have_text("done", timeout=60_000)
    expect(page.locator("#result-prefill canvas")).to_be_visible()
    expect(page.locator("#result-exactness")).to_contain_text("Identical, token for token.")
    page.wait_for_function(
        "() => !!window.KvCharts"
        " && !!window.KvCharts.Chart.getChart(document.querySelector('#result-prefill canvas'))"
    )
    screenshot(page, "lab-result")
    # The run is listed on the lab page.
    page.get_by_role("link", name="The lab").click()
    expect(page.locator("#lab-runs")).to_contain_text("tiny")
    assert violations == [], violations


def test_calculator_change_the_model_and_see_numbers_and_chart_change(page) -> None:  # type: ignore[no-untyped-def]
    violations = watch_csp(page)
    page.goto("/")
    page.get_by_role("link", name="Calculator", exact=True).click()
    expect(page.locator("#calc-results")).to_be_visible()
    chart_drawn(page, "calc-chart")
    before = page.locator("#calc-per-token").inner_text()
    chart_before = page.evaluate(
        "() => window.KvCharts.Chart.getChart(document.getElementById('calc-chart')).data.datasets[0].label"
    )
    screenshot(page, "calculator-default")
    page.get_by_label("Model").select_option(label="Llama-2-7B")  # a select submits the form itself
    expect(page).to_have_url(re.compile(r"model=llama2_7b"))
    expect(page.locator("#calc-per-token")).to_have_text("512 KiB")
    assert before != "512 KiB"
    chart_drawn(page, "calc-chart")
    chart_after = page.evaluate(
        "() => window.KvCharts.Chart.getChart(document.getElementById('calc-chart')).data.datasets[0].label"
    )
    assert chart_before != chart_after and "Llama-2-7B" in chart_after
    # A typo in a number keeps what was typed and says which field.
    page.get_by_label("Context (tokens)").fill("4k tokens")
    page.get_by_role("button", name="Calculate").click()
    expect(page.locator("#calc-error")).to_contain_text("context")
    expect(page.get_by_label("Context (tokens)")).to_have_value("4k tokens")
    page.get_by_label("Context (tokens)").fill("32768")
    page.get_by_role("button", name="Calculate").click()
    expect(page.locator("#calc-cache-size")).to_have_text("16.00 GiB")
    # The URL reopens this exact case.
    url = page.url
    page.goto("/")
    page.goto(url)
    expect(page.locator("#calc-cache-size")).to_have_text("16.00 GiB")
    screenshot(page, "calculator-llama2")
    assert violations == [], violations


def test_calculator_at_phone_width(browser, live_server: str) -> None:  # type: ignore[no-untyped-def]
    context = browser.new_context(base_url=live_server, viewport={"width": 390, "height": 844})
    page = context.new_page()
    page.goto("/calculator")
    expect(page.locator("#calc-results")).to_be_visible()
    width = page.evaluate("() => document.documentElement.scrollWidth")
    assert width <= 390, f"the calculator scrolls sideways at 390 px ({width} px wide)"
    screenshot(page, "calculator-phone")
    context.close()

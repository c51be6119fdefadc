"""The lab's batching chart reads as two quantities: tokens/s against its own axis and one user's ms
per token against a second one (on one axis the latency was a flat line at 0), with batch sizes
ticked at whole numbers only (never 1.5). A tiny lab run started from the lab page's form.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import WIDTHS, page_at, screenshot, watch_csp

pytestmark = pytest.mark.browser

SCALES = """() => {
  const chart = window.KvCharts.Chart.getChart(document.querySelector('#result-batching canvas'));
  const axis = (id) => chart.scales[id] ? {
    title: chart.options.scales[id].title.text, ticks: chart.scales[id].ticks.map((t) => t.label),
    max: chart.scales[id].max } : null;
  return { x: axis('x'), y: axis('y'), y2: axis('y2'),
           on: chart.data.datasets.map((d) => [d.label, d.yAxisID]) };
}"""


@pytest.mark.parametrize("width", list(WIDTHS))
def test_the_batching_chart_has_two_axes_and_whole_batch_sizes(browser, live_server: str, width: str) -> None:  # type: ignore[no-untyped-def]
    context, page = page_at(browser, live_server, width)
    violations = watch_csp(page)
    page.goto("/lab")
    form = page.get_by_role("form", name="Start a lab run")
    form.get_by_label("A tiny model").check()
    form.get_by_label(re.compile("Batch size against tokens per second")).check()
    form.get_by_role("button", name="Run the lab").click()
    expect(page.locator("#lab-status")).to_have_text("done", timeout=90_000)
    page.wait_for_function(
        "() => !!window.KvCharts"
        " && !!window.KvCharts.Chart.getChart(document.querySelector('#result-batching canvas'))"
    )
    scales = page.evaluate(SCALES)
    assert scales["y2"] is not None, scales
    on = dict(scales["on"])
    assert on["tokens/s (all users)"] == "y" and on["ms per token (one user, right axis)"] == "y2", on
    assert "ms" in scales["y2"]["title"] and "tokens/s" in scales["y"]["title"]
    labels = [t for t in scales["x"]["ticks"] if t not in (None, "")]
    assert labels and all(re.fullmatch(r"\d+", str(t)) for t in labels), labels
    # The latency axis is scaled to the latency: its top is within a few times the slowest step.
    assert scales["y2"]["max"] < 1000, scales["y2"]
    screenshot(page, f"lab-batching-two-axes-{width}")
    assert violations == [], violations
    context.close()

"""A guest takes a numeric quiz on the roofline and solves each problem from the page, as a person would."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import screenshot

pytestmark = pytest.mark.browser


def _number(pattern: str, text: str) -> float:
    match = re.search(pattern, text)
    assert match, f"{pattern!r} not in {text!r}"
    return float(match.group(1).replace(",", ""))


def solve(prompt: str) -> tuple[str, str | None]:
    """Work the problem out from the numbers the page states: (answer to type, unit to pick)."""
    flops = _number(r"([\d,]+) TFLOP/s", prompt) * 1e12
    bandwidth = _number(r"([\d,]+) GB/s", prompt) * 1e9
    if "time per output token" in prompt:
        params = _number(r"\(([\d,]+) parameters", prompt)
        # A decode step reads every matrix it multiplies by, not the input embedding table.
        embedding = re.search(r"of which ([\d,]+) are the input embedding table", prompt)
        if embedding:
            params -= float(embedding.group(1).replace(",", ""))
        bytes_per_param = _number(r"\(([\d.]+) bytes? per\s+parameter\)", prompt)
        return f"{params * bytes_per_param / bandwidth * 1e3:.3f}", "ms"
    if "batch size" in prompt:
        bytes_per_param = _number(r"\(([\d.]+) bytes? per\s+parameter\)", prompt)
        return f"{flops / bandwidth * bytes_per_param / 2:.0f}", None
    assert "arithmetic intensity" in prompt, prompt
    return f"{flops / bandwidth:.1f}", None


def test_answer_roofline_problems_through_the_quiz_page(page) -> None:  # type: ignore[no-untyped-def]
    page.goto("/")
    page.get_by_role("link", name="Quiz", exact=True).click()
    form = page.get_by_role("form", name="Start a quiz")
    form.get_by_label("The roofline of inference").check()
    form.get_by_label("Recall").uncheck()
    form.get_by_label("Multiple choice").uncheck()
    form.get_by_label("Numeric problems").check()
    form.get_by_label("Cards").fill("3")
    form.get_by_role("button", name="Start the quiz").click()

    for n in range(1, 4):
        expect(page.locator(".quiz-progress")).to_have_text(f"Question {n} of 3")
        expect(page.locator(".quiz-item")).to_have_attribute("data-kind", "numeric")
        prompt = page.locator("section.question").inner_text()
        assert re.search(r"H[12]00|A100", prompt)  # a real GPU's data-sheet figures
        value, unit = solve(prompt)
        page.get_by_label("Your answer").fill(value)
        if unit is not None:
            page.get_by_label("Unit").select_option(unit)
            expect(page.locator(".numeric-form")).to_contain_text("ms and us are different answers")
        screenshot(page, f"quiz-roofline-{n}")
        page.get_by_role("button", name="Check", exact=True).click()
        expect(page.locator("#numeric-result")).to_contain_text("Right")
        expect(page.locator(".worked-solution summary")).to_have_text("Worked solution")
        page.locator(".worked-solution summary").click()
        expect(page.locator(".worked-solution li").first).to_be_visible()
        expect(page.locator("#rated")).to_contain_text("Good")
        page.locator("#next").click()
    expect(page.get_by_role("heading", name="Quiz finished")).to_be_visible()

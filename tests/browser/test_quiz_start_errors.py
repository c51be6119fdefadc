"""A quiz started with no kind of question ticked: the message stands beside the kinds, above
nothing else, and every choice made is still there to fix, at desktop and at phone width."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import screenshot

pytestmark = pytest.mark.browser


@pytest.mark.parametrize("width, height", [(1200, 900), (390, 844)])
def test_the_error_stands_beside_the_kinds_and_the_form_is_kept(page, width: int, height: int) -> None:  # type: ignore[no-untyped-def]
    page.set_viewport_size({"width": width, "height": height})
    page.goto("/quiz")
    form = page.get_by_role("form", name="Start a quiz")
    form.get_by_label("KV-cache memory arithmetic").check()
    form.get_by_label("Cards").fill("7")
    for kind in ("Recall", "Multiple choice", "Numeric problems"):
        form.get_by_label(kind).uncheck()
    form.get_by_role("button", name="Start the quiz").click()

    options = page.get_by_role("group", name="Options")
    expect(options.get_by_role("alert")).to_have_text("Choose at least one kind of question.")
    expect(page.get_by_role("group", name="Which cards").get_by_role("alert")).to_have_count(0)
    form = page.get_by_role("form", name="Start a quiz")
    expect(form.get_by_label("KV-cache memory arithmetic")).to_be_checked()
    expect(form.get_by_label("Cards")).to_have_value("7")
    screenshot(page, f"quiz-start-error-{width}")

    form.get_by_label("Recall").check()
    form.get_by_role("button", name="Start the quiz").click()
    expect(page.locator(".quiz-item")).to_have_attribute("data-kind", "recall")

"""The rating buttons say the interval the review then stores, fuzz included: a new card's Easy
said "8 days" on every card while the cards came back in 7, 8, 10 and 10 days."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.browser


def test_easy_says_the_days_the_review_stores(page) -> None:  # type: ignore[no-untyped-def]
    page.goto("/quiz")
    form = page.get_by_role("form", name="Start a quiz")
    form.get_by_label("Rotary position embeddings", exact=True).check()
    for other in ("Multiple choice", "Numeric problems"):
        form.get_by_label(other).uncheck()
    form.get_by_label("Cards").fill("3")
    form.get_by_role("button", name="Start the quiz").click()
    said, stored = [], []
    for _ in range(3):
        expect(page.locator(".quiz-item")).to_have_attribute("data-kind", "recall")
        page.get_by_role("button", name=re.compile("Reveal the strong answer")).click()
        easy = page.locator(".rating-buttons button[value='easy']")
        label = easy.locator("small").inner_text()
        assert re.fullmatch(r"\d+ days", label), label
        said.append(label)
        easy.click()
        flash = page.locator(".flash").inner_text()
        found = re.search(r"Easy, due again in (\d+ days)\.", flash)
        assert found, flash
        stored.append(found[1])
    assert said == stored

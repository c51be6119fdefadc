"""The calculator as a person reaches it: from a card's "Open this case" link (the card's own case,
never past the model's window), a pasted config.json read without picking the menu first, picking
"My config.json" before pasting (no error yet), a small roofline intensity written as 0.5, and a
warning for a context past the model's window. At a desktop width and a phone's.
"""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import WIDTHS, page_at, screenshot

pytestmark = pytest.mark.browser

TINY_LLAMA = {
    "num_hidden_layers": 22,
    "num_attention_heads": 32,
    "num_key_value_heads": 4,
    "hidden_size": 2048,
    "intermediate_size": 5632,
    "vocab_size": 32000,
    "max_position_embeddings": 2048,
}


@pytest.mark.parametrize("width", list(WIDTHS))
def test_the_gpt2_card_opens_its_own_case(browser, live_server: str, width: str) -> None:  # type: ignore[no-untyped-def]
    context, page = page_at(browser, live_server, width)
    page.goto("/cards/kv-formula-gpt2-small")
    page.get_by_role("button", name="Reveal the strong answer").click()
    page.get_by_role("link", name="Open this case in the calculator").click()
    expect(page.locator("#calc-results")).to_be_visible()
    expect(page.get_by_label("Context (tokens)")).to_have_value("1024")
    expect(page.get_by_label("Batch")).to_have_value("64")
    expect(page.locator("#calc-cache-size")).to_have_text("4.50 GiB")  # the card's own figure
    expect(page.locator("#calc-window-warning")).to_have_count(0)
    # The same model past its 1,024-token window: the page says so.
    page.get_by_label("Context (tokens)").fill("4096")
    page.get_by_label("Batch").fill("1")
    page.get_by_role("button", name="Calculate").click()
    expect(page.locator("#calc-window-warning")).to_contain_text("1,024 tokens")
    # fp32 weights at batch 1: 0.5 FLOP per byte, not "0".
    expect(page.locator("#calc-roofline")).to_contain_text(re.compile(r"^0\.5 FLOP per byte"))
    screenshot(page, f"calculator-gpt2-window-{width}")
    context.close()


@pytest.mark.parametrize("width", list(WIDTHS))
def test_a_pasted_config_is_read_and_picking_it_first_waits_for_the_paste(  # type: ignore[no-untyped-def]
    browser, live_server: str, width: str
) -> None:
    context, page = page_at(browser, live_server, width)
    page.goto("/calculator")
    # Picking "My config.json" first opens the box to paste into; nothing is refused yet.
    page.get_by_label("Model").select_option(label="My config.json (paste below)")
    box = page.locator("#calc-config")
    expect(box).to_be_visible()
    expect(box).to_be_focused()
    expect(page.locator("#calc-error")).to_have_count(0)
    box.fill(json.dumps(TINY_LLAMA))
    page.get_by_role("button", name="Calculate").click()
    expect(page.locator("#calc-results h2")).to_contain_text("on")
    expect(page.locator("#calc-per-token")).to_have_text("22 KiB")  # 2 x 22 x 4 x 64 x 2 bytes = 22,528

    # A fresh page, the menu left on its default model: the paste alone decides.
    page.goto("/calculator")
    page.locator("summary", has_text="Paste a config.json").click()
    page.locator("#calc-config").fill(json.dumps(TINY_LLAMA))
    page.get_by_label("Context (tokens)").fill("4096")
    page.get_by_role("button", name="Calculate").click()
    expect(page.locator("#calc-per-token")).to_have_text("22 KiB")
    expect(page.get_by_label("Model")).to_have_value("custom")
    expect(page.locator("#calc-window-warning")).to_contain_text("2,048 tokens")
    screenshot(page, f"calculator-pasted-config-{width}")
    context.close()


# Cards whose link opens a case: the figure the card writes, as the page writes it ("0.50 GiB" and
# "512 KiB", where the page once wrote "512.00 MiB" and "512.00 KiB" for the same bytes).
CARD_CASES = [
    ("throughput-against-batch-size", "4096", "1", "#calc-cache-size", "0.50 GiB"),
    ("real-model-shapes-80gb", "4096", "1", "#calc-per-token", "512 KiB"),
    ("long-context-on-eight-gpus", "131072", "1", "#calc-cache-size", "40.00 GiB"),
]


@pytest.mark.parametrize("width", list(WIDTHS))
def test_each_card_link_opens_the_figure_the_card_writes(browser, live_server: str, width: str) -> None:  # type: ignore[no-untyped-def]
    context, page = page_at(browser, live_server, width)
    for card_id, tokens, batch, figure, text in CARD_CASES:
        page.goto(f"/cards/{card_id}")
        reveal = page.get_by_role("button", name="Reveal the strong answer")
        if reveal.count():
            reveal.click()
        page.get_by_role("link", name="Open this case in the calculator").click()
        expect(page.locator("#calc-results")).to_be_visible()
        expect(page.get_by_label("Context (tokens)")).to_have_value(tokens)
        expect(page.get_by_label("Batch")).to_have_value(batch)
        expect(page.locator(figure)).to_have_text(text)
        page.goto(f"/cards/{card_id}")
        expect(page.locator("main")).to_contain_text(text)  # the card writes the same words
    screenshot(page, f"calculator-card-cases-{width}")
    context.close()

"""Every computed figure a card quotes matches figures.py, and appears on the card as declared."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.content.figures import compute_figures, naive_vs_cached_work
from app.content.loader import load_bank

ROOT = Path(__file__).resolve().parents[2] / "questions"
BANK = load_bank(ROOT)
FIGURES = compute_figures()
DECLARED = [(card, name, text) for card in BANK.cards for name, text in card.figures.items()]


def test_the_bank_declares_figures() -> None:
    assert len(DECLARED) >= 10


@pytest.mark.parametrize(("card", "name", "text"), DECLARED, ids=lambda v: getattr(v, "id", str(v)))
def test_declared_figure_is_computed_value_and_on_the_card(card, name: str, text: str) -> None:
    assert name in FIGURES, f"{card.path}: figures.{name}: no such computed figure"
    assert text == FIGURES[name], (
        f"{card.path}: figures.{name}: card says {text!r}, computed {FIGURES[name]!r}"
    )
    assert text in card.search_text() + card.notes, f"{card.path}: {text!r} is declared but not on the card"


def test_headline_figures_match_the_sources() -> None:
    # The seeds' published figures, recomputed from model shapes.
    assert FIGURES["gpt2_small_kib_per_token_fp32"] == "72 KiB"
    assert FIGURES["gpt2_small_gib_1024x64_fp32"] == "4.50 GiB"
    assert FIGURES["llama2_7b_kib_per_token"] == "512 KiB"
    assert FIGURES["mistral_7b_kib_per_token"] == FIGURES["llama3_8b_kib_per_token"] == "128 KiB"
    assert FIGURES["llama2_70b_kib_per_token"] == "320 KiB"
    assert FIGURES["mha_70b_gib_4k"] == "10.00 GiB" and FIGURES["mqa_70b_gib_4k"] == "0.16 GiB"
    assert FIGURES["llama2_7b_params"] == "6.74B" and FIGURES["llama3_8b_params"] == "8.03B"
    assert FIGURES["llama3_8b_4k_seqs_80gb"] == "119"
    assert FIGURES["score_fp16_mib_32768"] == "2,048 MiB"


def test_lesson_work_counters() -> None:
    assert naive_vs_cached_work(4, 60) == {
        "naive_proj": 6030,
        "naive_scores": 85330,
        "cached_proj": 192,
        "cached_scores": 2086,
    }

"""Every card that states a prefill figure says which FLOP convention it is computed on."""

from __future__ import annotations

from pathlib import Path

from app.content.figures import PREFILL_CONVENTION, PREFILL_FIGURE_PREFIXES, compute_figures
from app.content.loader import load_bank
from app.content.shapes import LLAMA3_8B

BANK = load_bank(Path(__file__).resolve().parents[2] / "questions")


def test_every_prefill_figure_card_states_the_convention() -> None:
    using = [c for c in BANK.cards if any(n.startswith(PREFILL_FIGURE_PREFIXES) for n in c.figures)]
    assert len(using) >= 10
    missing = [c.path for c in using if PREFILL_CONVENTION not in c.notes]
    assert not missing, f"cards with prefill figures but no stated convention: {missing}"


def test_the_prefixes_name_real_figures() -> None:
    names = compute_figures()
    for prefix in PREFILL_FIGURE_PREFIXES:
        assert any(n.startswith(prefix) for n in names), prefix


def test_the_convention_counts_the_lm_head_once_not_per_token() -> None:
    head = 2 * LLAMA3_8B.vocab * LLAMA3_8B.hidden
    # One more prompt token adds its layers and its attention, never another LM head.
    extra = LLAMA3_8B.prefill_flops(4097) - LLAMA3_8B.prefill_flops(4096)
    attention_extra = 2 * (4097**2 - 4096**2) * LLAMA3_8B.q_heads * LLAMA3_8B.head_dim * LLAMA3_8B.layers
    assert extra == 2 * LLAMA3_8B.layer_params() + attention_extra
    assert LLAMA3_8B.prefill_flops(1) - 2 * LLAMA3_8B.layer_params() - head > 0  # attention at n = 1

"""The tiered-KV numeric kinds: golden answers recomputed by hand and matched to the card's figures,
and the named slips (forgetting the tensor-parallel split, reading PCIe's both-directions rate,
leaving attention out of the recompute) rejected on every seed of a 200-seed sweep."""

from __future__ import annotations

import random
import re

import pytest

from app.content.figures import compute_figures
from app.content.shapes import LATER_MODELS, LLAMA2_7B, LLAMA3_8B
from app.services import numeric

SEEDS = range(200)
RATES = {"PCIe Gen5": 64e9, "400 Gb/s": 50e9, "NVLink 4": 450e9}


def check(question: numeric.NumericQuestion, text: str, unit: str | None = None) -> numeric.NumericCheck:
    return numeric.check_answer(question.to_payload(), text, unit)


def _setting(q: numeric.NumericQuestion) -> tuple[object, int, int, float]:
    model = next(
        m for m in (LLAMA2_7B, LLAMA3_8B, *LATER_MODELS.values()) if q.prompt.startswith(f"**{m.name}**")
    )
    tokens = int(re.search(r"\*\*([\d,]+)-token\*\*", q.prompt).group(1).replace(",", ""))  # type: ignore[union-attr]
    tp_match = re.search(r"\*\*(\d+) H100s\*\*", q.prompt)
    tp = int(tp_match.group(1)) if tp_match else 1
    rate = next(r for name, r in RATES.items() if name in q.prompt)
    return model, tokens, tp, rate


def _find(name: str, text: str) -> numeric.NumericQuestion:
    for seed in range(3000):
        q = numeric.GENERATORS[name](random.Random(seed))
        if all(part in q.prompt for part in text.split("|")):
            return q
    raise AssertionError(f"no {name} question with {text!r}")


def test_golden_70b_32k_over_pcie_matches_the_card() -> None:
    figures = compute_figures()
    q = _find("kv_load_time", "Llama-3.1-70B|**32,768-token**|**8 H100s**|PCIe Gen5")
    # 80 layers x 8 KV heads x 128 x 2 tensors x 2 bytes = 327,680 bytes a token; an eighth per GPU.
    assert q.answer == pytest.approx(327_680 * 32_768 / 8 / 64e9)
    assert figures["tier_70b_pcie_32k_ms_tp8"] == "21.0 ms"
    assert q.answer * 1e3 == pytest.approx(21.0, abs=0.05)
    assert check(q, "21", "ms").correct and check(q, "0.021", "s").correct
    r = _find("kv_load_vs_recompute", "Llama-3.1-70B|**32,768-token**|**8 H100s**|PCIe Gen5")
    assert f"{r.answer:.0f}x" == figures["tier_70b_pcie_vs_recompute"] == "36x"


@pytest.mark.parametrize("seed", SEEDS)
def test_load_time_slips_fail(seed: int) -> None:
    q = numeric.GENERATORS["kv_load_time"](random.Random(seed))
    model, tokens, tp, rate = _setting(q)
    cache = 2 * model.layers * model.kv_heads * model.head_dim * 2 * tokens  # type: ignore[attr-defined]
    assert q.answer == pytest.approx(cache / tp / rate)
    assert check(q, f"{cache / tp / rate * 1e3:.4f}", "ms").correct
    if tp > 1:
        assert not check(q, f"{cache / rate * 1e3:.4f}", "ms").correct  # the whole cache over one link
    if rate == 64e9:
        assert not check(q, f"{cache / tp / 128e9 * 1e3:.4f}", "ms").correct  # both directions added
    assert not check(q, f"{cache / tp / rate:.6f}", "ms").correct  # seconds typed as ms


@pytest.mark.parametrize("seed", SEEDS)
def test_recompute_ratio_slips_fail(seed: int) -> None:
    q = numeric.GENERATORS["kv_load_vs_recompute"](random.Random(seed))
    model, tokens, tp, rate = _setting(q)
    m = model
    load = 2 * m.layers * m.kv_heads * m.head_dim * 2 * tokens / tp / rate  # type: ignore[attr-defined]
    layers = 2 * m.layer_params() * tokens  # type: ignore[attr-defined]
    attention = 2 * m.layers * m.q_heads * m.head_dim * tokens**2  # type: ignore[attr-defined]
    head = 2 * m.vocab * m.hidden  # type: ignore[attr-defined]
    peak = tp * 989e12
    expected = (layers + attention + head) / peak / load
    assert q.answer == pytest.approx(expected)
    assert check(q, f"{expected:.3f}").correct
    assert not check(q, f"{(layers + head) / peak / load:.3f}").correct  # attention left out
    assert not check(q, f"{1 / expected:.4f}").correct  # the ratio upside down


def test_the_kinds_fit_the_tiered_storage_cards() -> None:
    assert {"kv_load_time", "kv_load_vs_recompute"} <= set(
        numeric.TOPIC_GENERATORS["kv-routing-tiered-storage"]
    )

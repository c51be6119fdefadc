"""The 2026 numeric kinds: golden answers recomputed from first principles, and the named slips
(counting the embedding table, forgetting the block scales, adding acceptance rates instead of
multiplying them) rejected on every seed of a 200-seed sweep."""

from __future__ import annotations

import random
import re

import pytest

from app.content.shapes import LATER_MODELS, LLAMA3_8B
from app.services import numeric

SEEDS = range(200)


def check(question: numeric.NumericQuestion, text: str, unit: str | None = None) -> numeric.NumericCheck:
    return numeric.check_answer(question.to_payload(), text, unit)


def test_low_precision_golden_nvfp4_llama3_8b() -> None:
    for seed in range(2000):
        q = numeric.GENERATORS["low_precision_weight_bytes"](random.Random(seed))
        if "Llama-3-8B" in q.prompt and "NVFP4" in q.prompt:
            break
    else:
        raise AssertionError("no NVFP4 Llama-3-8B question")
    # 32 layers x (q, k, v, o, gate, up, down) + 32 x 2 norms + final norm + LM head, 4.5 bits each.
    layer = 2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336 + 2 * 4096
    params = 32 * layer + 4096 + 128256 * 4096
    assert q.answer == pytest.approx(params * 4.5 / 8)
    assert q.answer_text == "4.22 GB"
    assert check(q, "4.22", "GB").correct
    assert not check(q, "4.22", "GiB").correct


@pytest.mark.parametrize("seed", SEEDS)
def test_low_precision_slips_fail(seed: int) -> None:
    q = numeric.GENERATORS["low_precision_weight_bytes"](random.Random(seed))
    model = next(m for m in (LLAMA3_8B, *LATER_MODELS.values()) if f"**{m.name}**" in q.prompt)
    bits = 8.0 if "FP8" in q.prompt else (4.25 if "MXFP4" in q.prompt else 4.5)
    assert check(q, f"{q.answer / 1e9:.4f}", "GB").correct
    with_embedding = model.dense_params() * bits / 8  # the input table counted as read
    assert not check(q, f"{with_embedding / 1e9:.4f}", "GB").correct
    if bits < 8:
        no_scales = model.matmul_params() * 4 / 8  # the shared scales forgotten
        assert not check(q, f"{no_scales / 1e9:.4f}", "GB").correct


def _rates(q: numeric.NumericQuestion) -> list[float]:
    listed = re.search(r"probability \*\*([0-9., ]+)\*\*", q.prompt)
    assert listed
    return [float(x) for x in listed.group(1).split(", ")]


def test_eagle_golden() -> None:
    q = next(
        q
        for seed in range(2000)
        if _rates(q := numeric.GENERATORS["eagle_acceptance"](random.Random(seed))) == [0.8, 0.7, 0.6, 0.5]
    )
    assert q.answer == pytest.approx(2.864)
    assert check(q, "2.864").correct
    assert check(q, "2.86").correct


@pytest.mark.parametrize("seed", SEEDS)
def test_eagle_slips_fail(seed: int) -> None:
    q = numeric.GENERATORS["eagle_acceptance"](random.Random(seed))
    rates = _rates(q)
    run, expected = 1.0, 1.0
    for a in rates:
        run *= a
        expected += run
    assert q.answer == pytest.approx(expected)
    assert check(q, f"{expected:.3f}").correct
    assert not check(q, f"{1 + sum(rates):.3f}").correct  # rates added, not multiplied
    assert not check(q, f"{expected - 1:.3f}").correct  # the target's own token forgotten
    first = rates[0]
    constant = sum(first**k for k in range(len(rates) + 1))  # constant acceptance assumed
    assert not check(q, f"{constant:.3f}").correct


def test_new_kinds_fit_the_new_topics() -> None:
    assert "low_precision_weight_bytes" in numeric.TOPIC_GENERATORS["low-precision-formats"]
    assert "eagle_acceptance" in numeric.TOPIC_GENERATORS["speculative-decoding-modern"]


@pytest.mark.parametrize("seed", SEEDS)
def test_all_to_all_slips_fail(seed: int) -> None:
    q = numeric.GENERATORS["all_to_all_bytes"](random.Random(seed))
    tokens = int(re.search(r"for \*\*(\d+)\*\* token", q.prompt).group(1))  # type: ignore[union-attr]
    layers = 58 if "all 58" in q.prompt else 1
    out = 1 if "FP8" in q.prompt else 2
    expected = tokens * layers * 8 * 7168 * (out + 2)
    assert q.answer == expected
    assert check(q, f"{expected / 1e6:.4f}", "MB").correct
    assert not check(q, f"{tokens * layers * 8 * 7168 * out / 1e6:.4f}", "MB").correct  # combine forgotten
    assert not check(
        q, f"{tokens * layers * 7168 * (out + 2) / 1e6:.4f}", "MB"
    ).correct  # one copy, not top-8
    assert not check(q, f"{expected / 1e6:.4f}", "MiB").correct


def test_all_to_all_golden() -> None:
    for seed in range(2000):
        q = numeric.GENERATORS["all_to_all_bytes"](random.Random(seed))
        if "**1** token over **one MoE layer**" in q.prompt and "FP8" in q.prompt:
            break
    else:
        raise AssertionError("no one-token FP8 question")
    assert q.answer == 8 * 7168 * 1 + 8 * 7168 * 2 == 172_032


@pytest.mark.parametrize("seed", SEEDS)
def test_hybrid_state_slips_fail(seed: int) -> None:
    q = numeric.GENERATORS["hybrid_state_vs_kv"](random.Random(seed))
    tokens = int(re.search(r"\*\*([\d,]+) tokens\*\*", q.prompt).group(1).replace(",", ""))  # type: ignore[union-attr]
    if "Jamba" in q.prompt:
        kv, state = 2 * 4 * 8 * 128 * 2, 28 * (8192 * 16 + 8192 * 3) * 2
        all_layers = 2 * 32 * 8 * 128 * 2
    else:
        kv, state = 2 * 12 * 2 * 256 * 2, 36 * (32 * 128 * 128 + 8192 * 3) * 2
        all_layers = 2 * 48 * 2 * 256 * 2
    expected = kv * tokens + state
    assert q.answer == expected
    assert check(q, f"{expected / 2**30:.5f}", "GiB").correct
    assert not check(q, f"{kv * tokens / 2**30:.5f}", "GiB").correct  # the state forgotten
    assert not check(q, f"{all_layers * tokens / 2**30:.5f}", "GiB").correct  # every layer given a cache


def test_jamba_golden_matches_the_card_figures() -> None:
    from app.content.figures import compute_figures

    figures = compute_figures()
    assert figures["hyb_jamba_kib_per_token"] == "16 KiB"
    assert figures["hyb_jamba_gib_256k"] == "4.00 GiB"  # the Jamba paper's 4GB at 256K
    assert figures["hyb_mamba2_27b_state_mb"] == "86.0 MB"

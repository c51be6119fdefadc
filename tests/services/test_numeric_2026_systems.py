"""The 2026 systems numeric kinds: golden answers recomputed from the shapes by hand, and the named
slips (a full d_in x d_out matrix per adapter, one factor forgotten, K and V taken as square, the
GQA ratio forgotten, NVLink's both-direction figure used) rejected on every seed of a 200-seed
sweep."""

from __future__ import annotations

import random
import re

import pytest

from app.content.figures import compute_figures
from app.content.shapes import LATER_MODELS, LLAMA3_8B, ModelShape
from app.services import numeric

SEEDS = range(200)
MODELS = {m.name: m for m in (LLAMA3_8B, LATER_MODELS["llama31_70b"], LATER_MODELS["qwen25_7b"])}


def check(question: numeric.NumericQuestion, text: str, unit: str | None = None) -> numeric.NumericCheck:
    return numeric.check_answer(question.to_payload(), text, unit)


def _adapter(q: numeric.NumericQuestion) -> tuple[ModelShape, int, list[str]]:
    model = next(m for name, m in MODELS.items() if f"**{name}**" in q.prompt)
    rank = int(re.search(r"\*\*rank-(\d+)\*\*", q.prompt).group(1))  # type: ignore[union-attr]
    if "q and v only" in q.prompt:
        modules = ["q", "v"]
    elif "every linear layer" in q.prompt:
        modules = ["q", "k", "v", "o", "gate", "up", "down"]
    else:
        modules = ["q", "k", "v", "o"]
    return model, rank, modules


def _shapes(m: ModelShape, *, square_kv: bool = False) -> dict[str, tuple[int, int]]:
    hd = m.hidden // m.q_heads
    kv = m.hidden if square_kv else m.kv_heads * hd
    ff = m.intermediate
    d = m.hidden
    square, wide = (d, d), (d, ff)
    return {"q": square, "k": (d, kv), "v": (d, kv), "o": square, "gate": wide, "up": wide, "down": (ff, d)}


def test_lora_golden_llama3_8b_rank16_every_linear_matches_the_card() -> None:
    for seed in range(2000):
        q = numeric.GENERATORS["lora_adapter_bytes"](random.Random(seed))
        if "**Llama-3-8B**" in q.prompt and "**rank-16**" in q.prompt and "every linear" in q.prompt:
            break
    else:
        raise AssertionError("no rank-16 all-linear Llama-3-8B question")
    # 16 x (q 8192 + k 5120 + v 5120 + o 8192 + gate 18432 + up 18432 + down 18432) x 32 layers x 2 bytes
    assert q.answer == 16 * 81920 * 32 * 2 == 83_886_080
    assert q.answer_text == "83.89 MB"
    assert compute_figures()["lora_llama3_8b_r16_mb"] == "83.9 MB"
    assert check(q, "83.9", "MB").correct
    assert not check(q, "83.9", "MiB").correct


@pytest.mark.parametrize("seed", SEEDS)
def test_lora_slips_fail(seed: int) -> None:
    q = numeric.GENERATORS["lora_adapter_bytes"](random.Random(seed))
    model, rank, modules = _adapter(q)
    shapes = _shapes(model)
    expected = 2 * model.layers * sum(rank * (shapes[n][0] + shapes[n][1]) for n in modules)
    assert q.answer == expected
    assert check(q, f"{expected / 1e6:.4f}", "MB").correct
    full = 2 * model.layers * sum(shapes[n][0] * shapes[n][1] for n in modules)  # the matrices themselves
    assert not check(q, f"{full / 1e6:.4f}", "MB").correct
    one_factor = 2 * model.layers * sum(rank * shapes[n][0] for n in modules)  # B forgotten
    assert not check(q, f"{one_factor / 1e6:.4f}", "MB").correct
    if {"k", "v"} & set(modules) and model.kv_heads < model.q_heads:
        square = _shapes(model, square_kv=True)  # K and V taken as hidden x hidden
        no_gqa = 2 * model.layers * sum(rank * (square[n][0] + square[n][1]) for n in modules)
        assert not check(q, f"{no_gqa / 1e6:.4f}", "MB").correct


def _ring(q: numeric.NumericQuestion) -> tuple[int, int, float]:
    heads = re.search(r"\((\d+) query heads, (\d+) KV heads\)", q.prompt)
    n_q, n_kv = (int(heads.group(1)), int(heads.group(2))) if heads else (1, 1)
    one_way = 450e9 if "NVLink" in q.prompt else 50e9
    return n_q, n_kv, one_way


def test_ring_golden_405b_over_infiniband_matches_the_card() -> None:
    for seed in range(2000):
        q = numeric.GENERATORS["ring_block_size"](random.Random(seed))
        if "405B" in q.prompt and "InfiniBand" in q.prompt:
            break
    else:
        raise AssertionError("no 405B InfiniBand question")
    assert q.answer == pytest.approx(8 / 128 * 989e12 / 50e9)  # 1,236 tokens
    assert compute_figures()["cp_min_block_405b_ib"] == "1,236"
    assert check(q, "1236").correct
    assert check(q, "1,240").correct  # within the 2% a rounded answer needs


@pytest.mark.parametrize("seed", SEEDS)
def test_ring_slips_fail(seed: int) -> None:
    q = numeric.GENERATORS["ring_block_size"](random.Random(seed))
    n_q, n_kv, one_way = _ring(q)
    expected = n_kv / n_q * 989e12 / one_way
    assert q.answer == pytest.approx(expected)
    assert check(q, f"{expected:.1f}").correct
    if n_q != n_kv:
        assert not check(q, f"{989e12 / one_way:.1f}").correct  # the GQA ratio forgotten
    if one_way == 450e9:
        assert not check(q, f"{n_kv / n_q * 989e12 / 900e9:.1f}").correct  # both directions counted


def test_new_kinds_fit_the_new_topics() -> None:
    assert "lora_adapter_bytes" in numeric.TOPIC_GENERATORS["multi-lora-serving"]
    assert "ring_block_size" in numeric.TOPIC_GENERATORS["context-parallelism"]
    assert "all_to_all_bytes" in numeric.TOPIC_GENERATORS["wide-expert-parallelism"]

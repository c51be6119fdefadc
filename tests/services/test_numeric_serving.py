"""The hardware and serving numeric kinds: golden answers, tolerance, units and the slips they explain."""

from __future__ import annotations

import random
import re

import pytest

from app.content import inference_math as im
from app.content.figures import compute_figures
from app.content.hardware import A100_80GB, H100_SXM, H200_SXM
from app.content.shapes import DEEPSEEK_V3, LATER_MODELS, LLAMA2_7B
from app.services import numeric

NEW_KINDS = (
    "min_decode_latency",
    "ridge_point",
    "crossover_batch",
    "quantized_kv_cache",
    "mla_kv_cache",
    "tp_cache_per_gpu",
    "speculative_tokens",
    "cost_per_million_tokens",
)
FIGURES = compute_figures()


def find(name: str, predicate) -> numeric.NumericQuestion:  # type: ignore[no-untyped-def]
    for seed in range(2000):
        question = numeric.GENERATORS[name](random.Random(seed))
        if predicate(question):
            return question
    raise AssertionError(f"no {name} question matches")


def check(question: numeric.NumericQuestion, text: str, unit: str | None = None) -> numeric.NumericCheck:
    return numeric.check_answer(question.to_payload(), text, unit)


@pytest.mark.parametrize("name", NEW_KINDS)
def test_each_kind_has_units_tolerance_and_a_worked_solution(name: str) -> None:
    for seed in range(30):
        q = numeric.GENERATORS[name](random.Random(seed))
        assert q.generator == name and q.units and q.unit in q.units
        assert q.tolerance > 0 and len(q.solution) >= 3
        number = q.answer_text.split()[0]
        assert number in " ".join(q.solution), (seed, q.answer_text)  # the solution reaches the answer
        assert check(q, q.answer_text).correct  # "4.02 ms" typed with its unit
        assert check(q, number, q.unit if q.dimension != "count" else None).correct
        inside = float(number.replace(",", "")) * (1 + q.tolerance * 0.5)
        assert check(q, f"{inside:.6g}", q.unit if q.dimension != "count" else None).correct
        outside = q.answer * (1 + q.tolerance * 3) + (q.abs_tolerance * 3 if q.dimension == "count" else 0)
        scaled = outside if q.dimension == "count" else outside / _unit_size(q.dimension, q.unit)
        assert not check(q, f"{scaled:.6g}", q.unit if q.dimension != "count" else None).correct


def _unit_size(dimension: str, unit: str) -> float:
    return numeric.UNIT_SYSTEMS[dimension][unit]


def test_min_decode_latency_matches_the_roofline_figure() -> None:
    q = find(
        "min_decode_latency",
        lambda q: "**Llama-2-7B**" in q.prompt and "H100" in q.prompt and "**bf16**" in q.prompt,
    )
    # A step reads every matrix but the 32,000 x 4,096 input embedding table.
    assert q.answer == pytest.approx((LLAMA2_7B.dense_params() - 32000 * 4096) * 2 / 3.35e12)
    assert q.answer_text == FIGURES["roofline_min_ms_llama2_7b_h100"] == "3.94 ms"
    assert q.dimension == "time" and q.units == ["ms", "us", "s"]
    assert check(q, "3.94", "ms").correct and check(q, "3940", "us").correct and check(q, "0.00394 s").correct
    slip = check(q, "3.94", "us")  # the right digits in the wrong unit
    assert not slip.correct and "check the unit" in slip.message and "1 ms = 1,000 us" in slip.message
    doubled = check(q, "7.88", "ms")  # 4 bytes per parameter, or no bf16 at all
    assert not doubled.correct and "bytes per parameter" in doubled.message
    wrong_kind = check(q, "3.94 GB")
    assert not wrong_kind.correct and "asks for a time, not an amount of memory" in wrong_kind.message


def test_int4_weights_cut_the_bound_by_four() -> None:
    q = find(
        "min_decode_latency",
        lambda q: "**Llama-2-7B**" in q.prompt and "H100" in q.prompt and "int4" in q.prompt,
    )
    # Half a byte for each of the 6,607,343,616 parameters a step reads: 986 us, the card's 0.99 ms.
    assert q.answer == pytest.approx((LLAMA2_7B.dense_params() - 32000 * 4096) * 0.5 / 3.35e12)
    assert q.answer_text == "986 us" and FIGURES["roofline_min_ms_llama2_7b_h100_int4"] == "0.99 ms"


@pytest.mark.parametrize(("gpu", "ridge"), [(A100_80GB, 153.0), (H100_SXM, 295.2), (H200_SXM, 206.0)])
def test_ridge_point_per_gpu(gpu, ridge: float) -> None:  # type: ignore[no-untyped-def]
    q = find("ridge_point", lambda q: f"**{gpu.name}**" in q.prompt)
    assert q.answer == pytest.approx(ridge, abs=0.05) and q.dimension == "intensity"
    assert check(q, f"{ridge:.0f} FLOP/byte").correct and check(q, f"{ridge:.0f} flops/byte").correct
    slip = check(q, f"{ridge / 1000:.3f}", "FLOP/byte")  # tera over giga without the 1,000
    assert not slip.correct and "tera is 10^12" in slip.message
    assert "not a unit of arithmetic intensity" in check(q, f"{ridge:.0f} parsecs").message


def test_crossover_batch_and_the_factor_of_two() -> None:
    q = find("crossover_batch", lambda q: "H100" in q.prompt and "**bf16**" in q.prompt)
    assert f"{q.answer:.0f} sequences" == FIGURES["roofline_crossover_h100_bf16"] == "295 sequences"
    assert check(q, "295").correct and check(q, "296 sequences").correct  # within one sequence
    slip = check(q, "148")  # forgot the 2 bytes of a bf16 weight
    assert not slip.correct and "factor of 2" in slip.message
    assert not check(q, "295 GB").correct


def test_quantized_cache_counts_its_scales() -> None:
    q = find(
        "quantized_kv_cache",
        lambda q: "**Llama-2-7B**" in q.prompt and "int8" in q.prompt and "group of 128" in q.prompt,
    )
    tokens = int(re.search(r"\*\*([\d,]+) tokens", q.prompt)[1].replace(",", ""))
    batch = int(re.search(r"cache of \*\*(\d+)\*\*", q.prompt)[1])
    elements = 2 * 32 * 32 * 128
    assert q.answer == pytest.approx((elements * 1 + elements / 128 * 2) * tokens * batch)
    assert q.answer < LLAMA2_7B.kv_bytes(tokens, batch) / 2 * 1.02  # about half of fp16, a little over
    slip = check(q, f"{q.answer / 1e9:.4g}", "GiB")  # GB digits with a GiB label
    assert not slip.correct and "GB against GiB" in slip.message


def test_mla_cache_is_deepseek_v3s_latent() -> None:
    q = find("mla_kv_cache", lambda q: "**4,096 tokens**" in q.prompt and "**1** sequence" in q.prompt)
    assert (
        q.answer
        == 61 * (512 + 64) * 2 * 4096
        == 4096 * int(FIGURES["deepseek_v3_bytes_per_token"].replace(",", ""))
    )
    assert q.config["kv_lora_rank"] == DEEPSEEK_V3.kv_lora_rank
    assert check(q, f"{q.answer / 2**20:.1f}", "MiB").correct
    slip = check(q, f"{2 * q.answer / 2**30:.4f}", "GiB")  # cached K and V separately
    assert not slip.correct and "factor of 2" in slip.message


def test_tp_cache_splits_kv_heads_then_replicates() -> None:
    model = LATER_MODELS["llama31_70b"]
    split = find("tp_cache_per_gpu", lambda q: "**Llama-3.1-70B**" in q.prompt and "over 4 GPUs" in q.prompt)
    tokens = int(re.search(r"\*\*([\d,]+) tokens", split.prompt)[1].replace(",", ""))
    batch = int(re.search(r"for \*\*(\d+)\*\*", split.prompt)[1])
    assert split.answer == model.kv_bytes(tokens, batch) / 4
    replicated = find(
        "tp_cache_per_gpu", lambda q: "**Llama-3.1-70B**" in q.prompt and "over 16 GPUs" in q.prompt
    )
    tokens = int(re.search(r"\*\*([\d,]+) tokens", replicated.prompt)[1].replace(",", ""))
    batch = int(re.search(r"for \*\*(\d+)\*\*", replicated.prompt)[1])
    assert replicated.answer == model.kv_bytes(tokens, batch) / 8  # one head per GPU, not half of one
    assert "replicated" in " ".join(replicated.solution)
    halved = check(replicated, f"{replicated.answer / 2 / 2**30:.4f}", "GiB")
    assert not halved.correct


def test_speculative_expected_tokens() -> None:
    q = find("speculative_tokens", lambda q: "gamma = 4**" in q.prompt and "alpha = 0.8**" in q.prompt)
    assert q.answer == pytest.approx(im.speculative_expected_tokens(0.8, 4)) == pytest.approx(3.3616)
    assert check(q, "3.36").correct and check(q, "3.36 tokens").correct
    slip = check(q, "2.36")  # forgot the target's own token
    assert not slip.correct and "plus one" in slip.message
    assert not check(q, "3.36 ms").correct


@pytest.mark.parametrize(
    ("topic", "kinds"),
    [
        ("roofline", {"min_decode_latency", "ridge_point", "crossover_batch"}),
        ("quantization", {"quantized_kv_cache", "min_decode_latency"}),
        ("mla", {"mla_kv_cache"}),
        ("parallelism", {"tp_cache_per_gpu"}),
        ("speculative-decoding", {"speculative_tokens"}),
    ],
)
def test_the_new_topics_draw_the_new_kinds(topic: str, kinds: set[str]) -> None:
    seen = {numeric.generate(topic, random.Random(seed)).generator for seed in range(60)}  # type: ignore[union-attr]
    assert seen == kinds


def test_cost_per_million_tokens_from_price_and_throughput() -> None:
    q = find("cost_per_million_tokens", lambda q: "$2.00 per hour" in q.prompt)
    throughput = float(re.search(r"\*\*([\d,]+) output tokens per second\*\*", q.prompt)[1].replace(",", ""))
    assert q.answer == pytest.approx(2.00 / (throughput * 3600) * 1e6)
    assert check(q, q.answer_text).correct and check(q, f"${q.answer:.3f}").correct
    per_hour = check(q, f"{q.answer * 1e6:.0f}")  # forgot to scale to a million
    assert not per_hour.correct
    assert not check(q, f"{q.answer:.3f} GB").correct
    assert {numeric.generate("serving-metrics", random.Random(s)).generator for s in range(5)} == {  # type: ignore[union-attr]
        "cost_per_million_tokens"
    }

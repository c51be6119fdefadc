"""Numeric questions from real model configs: answers agree with the figures, units and tolerance count."""

from __future__ import annotations

import random
import re

import pytest

from app.content.figures import compute_figures
from app.content.shapes import GPU_80GB_BYTES, LLAMA3_8B, MODELS
from app.services import numeric

SEEDS = range(40)


@pytest.mark.parametrize("name", list(numeric.GENERATORS))
def test_every_generator_checks_its_own_answer(name: str) -> None:
    generator = numeric.GENERATORS[name]
    for seed in SEEDS:
        question = generator(random.Random(seed))
        payload = question.to_payload()
        assert question.prompt and question.solution and question.unit in question.units or question.units
        number = question.answer_text.split()[0].rstrip("x")
        unit = question.unit if question.dimension != "count" else None
        assert numeric.check_answer(payload, number, unit).correct, (seed, question.answer_text)
        assert numeric.check_answer(
            payload, question.answer_text, None
        ).correct  # unit typed after the number
        # Three times the right number, in the answer's own unit, is wrong whatever its size.
        assert not numeric.check_answer(payload, str(float(number.replace(",", "")) * 3), unit).correct
        assert question.answer_text.split()[0].rstrip("x") in " ".join(question.solution)


def test_the_generators_cover_the_five_models() -> None:
    seen = set()
    for name in ("kv_bytes_per_token", "kv_cache_size", "score_matrix"):
        for seed in SEEDS:
            config = numeric.GENERATORS[name](random.Random(seed)).config
            seen.add(tuple(sorted(config.items())))
    assert len(seen) == len(MODELS)
    assert {"n_layer": 12, "n_head": 12, "n_embd": 768} in [dict(c) for c in seen]


def find(name: str, predicate) -> numeric.NumericQuestion:  # type: ignore[no-untyped-def]
    for seed in range(500):
        question = numeric.GENERATORS[name](random.Random(seed))
        if predicate(question):
            return question
    raise AssertionError(f"no {name} question matches")


def test_answers_agree_with_the_figures_the_cards_quote() -> None:
    figures = compute_figures()
    q = find("kv_bytes_per_token", lambda q: "Llama-2-70B" in q.prompt and "fp16" in q.prompt)
    assert f"{int(q.answer):,}" == figures["llama2_70b_bytes_per_token"]  # 327,680
    q = find("sequences_that_fit", lambda q: "Llama-3-8B" in q.prompt and "4,096-token" in q.prompt)
    assert f"{int(q.answer):,}" == figures["llama3_8b_4k_seqs_80gb"]
    q = find("sequences_that_fit", lambda q: "Llama-2-7B" in q.prompt and "4,096-token" in q.prompt)
    assert f"{int(q.answer):,}" == figures["llama2_7b_4k_seqs_80gb"]  # 30, not 31
    q = find("score_matrix", lambda q: q.unit == "entries" and "4,096 tokens" in q.prompt)
    assert f"{int(q.answer):,}" == figures["score_entries_4096"]
    q = find("naive_vs_cached", lambda q: "4-token prompt" in q.prompt and "60 new" in q.prompt)
    key = {"projections": "proj", "score elements": "scores"}[q.unit]
    loop = "naive" if "**naive loop**" in q.prompt else "cached"
    assert f"{int(q.answer):,}" == figures[f"lesson_{loop}_{key}_4_60"]
    q = find("gqa_saving", lambda q: q.unit == "x" and "Llama-2-70B" in q.prompt)
    assert f"{int(q.answer)}x" == figures["llama2_70b_gqa_factor"]


def test_gqa_saving_and_fit_arithmetic() -> None:
    q = find("gqa_saving", lambda q: q.unit == "GiB" and "Llama-3-8B" in q.prompt)
    tokens, batch = int(re.search(r"\*\*([\d,]+) tokens", q.prompt)[1].replace(",", "")), 1
    if m := re.search(r"batch of \*\*(\d+)\*\*", q.prompt):
        batch = int(m[1])
    mha = 2 * LLAMA3_8B.layers * LLAMA3_8B.q_heads * LLAMA3_8B.head_dim * 2 * tokens * batch
    assert q.answer == mha - LLAMA3_8B.kv_bytes(tokens, batch) == mha * 3 // 4

    for seed in SEEDS:
        q = numeric.sequences_that_fit(random.Random(seed))
        model = next(m for m in MODELS.values() if f"**{m.name}**" in q.prompt)
        tokens = int(re.search(r"\*\*([\d,]+)-token", q.prompt)[1].replace(",", ""))
        assert q.answer == (GPU_80GB_BYTES - 2 * model.llama_params()) // model.kv_bytes(tokens)


@pytest.mark.parametrize(
    ("given", "unit", "correct", "hint"),
    [
        ("2.5", "GiB", True, ""),
        ("2.51", "GiB", True, ""),  # within 1%
        ("2,560", "MiB", True, ""),  # the same amount in another binary unit
        ("2.6", "GiB", False, ""),  # 4% off
        ("2.5", "GB", False, "GB against GiB"),  # the unit is part of the check
        ("2.68", "GB", True, ""),  # 2.5 GiB is 2.68 GB
        ("2.5", "MiB", False, "check the unit"),
        ("5", "GiB", False, "factor of 2"),
        ("2.5 GiB", "MiB", True, ""),  # a unit typed after the number wins over the menu
        ("banana", "GiB", False, "not a number"),
        ("2.5 parsecs", "GiB", False, "not a unit of memory"),
    ],
)
def test_units_and_tolerance(given: str, unit: str, correct: bool, hint: str) -> None:
    payload = {
        "answer": 2.5 * 2**30,
        "dimension": "bytes",
        "units": ["GiB", "GB", "MiB", "MB"],
        "tolerance": 0.01,
        "answer_text": "2.50 GiB",
    }
    result = numeric.check_answer(payload, given, unit)
    assert result.correct is correct
    assert hint in result.message


def test_counts_are_exact() -> None:
    payload = {
        "answer": 30,
        "dimension": "count",
        "units": ["sequences"],
        "tolerance": 0.0,
        "answer_text": "30",
    }
    assert numeric.check_answer(payload, "30", None).correct
    assert numeric.check_answer(payload, "30 sequences", None).correct
    assert not numeric.check_answer(payload, "31", None).correct
    assert not numeric.check_answer(payload, "30 GiB", None).correct


def test_topics_without_numbers_have_no_numeric_question() -> None:
    assert numeric.generate("rope", random.Random(0)) is None
    assert numeric.generate("kv-memory", random.Random(0)) is not None


@pytest.mark.parametrize(
    "typed",
    ["0,70", "0,70 ms", "1,5", "1.234,5", "1,0245", "12,34 GiB"],
)
def test_a_comma_that_could_be_a_decimal_comma_is_refused_not_guessed(typed: str) -> None:
    # 0,70 for 702 us was read as 70 and rated Again: it must be asked again instead.
    payload = {
        "answer": 702e-6,
        "dimension": "time",
        "units": ["us", "ms", "s"],
        "tolerance": 0.01,
        "answer_text": "702 us",
    }
    result = numeric.check_answer(payload, typed, "ms")
    assert result.given is None and not result.correct
    assert "thousands separator" in result.message and "0.70" in result.message


@pytest.mark.parametrize("typed", ["1,024", "131,072", "12,345,678.5", "1 024", "1_024"])
def test_thousands_separators_still_read(typed: str) -> None:
    value, _ = numeric.read_answer(typed)
    assert value == float(typed.replace(",", "").replace(" ", "").replace("_", ""))


@pytest.mark.parametrize("typed", ["-5", "-5 bytes", "-0.5 GiB"])
def test_a_negative_size_is_refused(typed: str) -> None:
    payload = {
        "answer": 5.0,
        "dimension": "bytes",
        "units": ["bytes", "KiB"],
        "tolerance": 0.0,
        "answer_text": "5 bytes",
    }
    result = numeric.check_answer(payload, typed, "bytes")
    assert result.given is None and "never negative" in result.message

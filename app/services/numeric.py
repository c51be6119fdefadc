"""Auto-checked numeric questions: the registry of generators per topic, and the checker.

The generators live in app/services/numeric_memory.py (the KV cache from real model configs)
and app/services/numeric_serving.py (the hardware: roofline, quantized and MLA caches, tensor
parallelism, speculative decoding). Each returns the question, the exact answer in a base
unit (bytes, seconds, FLOP/byte, or a plain count), the units the answer may be given in, the
tolerance, and a worked solution. The unit is part of the check: 2.62 GB is not 2.62 GiB, and
4 ms is not 4 us.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from app.models import Card
from app.services import numeric_2026, numeric_2026_serving, numeric_2026_systems, numeric_serving
from app.services.numeric_memory import (
    gqa_saving,
    kv_bytes_per_token,
    kv_cache_size,
    naive_vs_cached,
    score_matrix,
    sequences_that_fit,
)
from app.services.numeric_question import (
    BYTE_UNITS,
    DIMENSION_NAMES,
    GIB_PER_GB,
    UNIT_SYSTEMS,
    NumericCheck,
    NumericQuestion,
    _n,
    canonical_unit,
    config_json,
)

__all__ = [
    "BYTE_UNITS",
    "FITS",
    "GENERATORS",
    "Fit",
    "NumericCheck",
    "NumericQuestion",
    "TOPIC_GENERATORS",
    "check_answer",
    "config_json",
    "fits",
    "generate",
    "generate_for",
    "gqa_saving",
    "has_numeric",
    "kinds_for",
    "kv_bytes_per_token",
    "kv_cache_size",
    "naive_vs_cached",
    "parse_answer",
    "score_matrix",
    "sequences_that_fit",
]

GENERATORS: dict[str, Callable[[random.Random], NumericQuestion]] = {
    "kv_bytes_per_token": kv_bytes_per_token,
    "kv_cache_size": kv_cache_size,
    "sequences_that_fit": sequences_that_fit,
    "gqa_saving": gqa_saving,
    "score_matrix": score_matrix,
    "naive_vs_cached": naive_vs_cached,
    "min_decode_latency": numeric_serving.min_decode_latency,
    "ridge_point": numeric_serving.ridge_point,
    "crossover_batch": numeric_serving.crossover_batch,
    "quantized_kv_cache": numeric_serving.quantized_kv_cache,
    "mla_kv_cache": numeric_serving.mla_kv_cache,
    "tp_cache_per_gpu": numeric_serving.tp_cache_per_gpu,
    "speculative_tokens": numeric_serving.speculative_tokens,
    "cost_per_million_tokens": numeric_serving.cost_per_million_tokens,
    "low_precision_weight_bytes": numeric_2026.low_precision_weight_bytes,
    "eagle_acceptance": numeric_2026.eagle_acceptance,
    "all_to_all_bytes": numeric_2026.all_to_all_bytes,
    "hybrid_state_vs_kv": numeric_2026.hybrid_state_vs_kv,
    "lora_adapter_bytes": numeric_2026_systems.lora_adapter_bytes,
    "ring_block_size": numeric_2026_systems.ring_block_size,
    "kv_load_time": numeric_2026_serving.kv_load_time,
    "kv_load_vs_recompute": numeric_2026_serving.kv_load_vs_recompute,
}


@dataclass(frozen=True)
class Fit:
    """The cards a kind of problem belongs to: cards of these topics and, when `tags` is set, only
    those with at least one of the tags (a topic's cards are not all about the number: the GQA
    topic's card on uptraining a checkpoint has nothing to do with the memory GQA saves)."""

    topics: tuple[str, ...]
    tags: frozenset[str] = frozenset()

    def fits(self, topic: str, tags: Iterable[str]) -> bool:
        return topic in self.topics and (not self.tags or not self.tags.isdisjoint(tags))


def _fit(*topics: str, tags: Iterable[str] = ()) -> Fit:
    return Fit(topics, frozenset(tags))


# Every kind says which cards it may be asked on; a card no kind fits is asked as recall or choice.
FITS: dict[str, Fit] = {
    "kv_bytes_per_token": _fit("kv-memory", "mha-mqa-gqa", tags=["kv-cache"]),
    "kv_cache_size": _fit("kv-memory", "cache-levers", tags=["memory", "capacity-planning", "long-context"]),
    "sequences_that_fit": _fit(
        "kv-memory", "batching-throughput", tags=["kv-cache", "memory", "capacity-planning"]
    ),
    "gqa_saving": _fit("mha-mqa-gqa", "cache-levers", tags=["kv-cache"]),
    "score_matrix": _fit("quadratic-attention"),
    "naive_vs_cached": _fit("naive-vs-cached", tags=["complexity"]),
    "min_decode_latency": _fit(
        "prefill-vs-decode",
        "roofline",
        "quantization",
        tags=["decode", "memory-bandwidth", "latency", "tpot", "weight-only"],
    ),
    "ridge_point": _fit("roofline"),
    "crossover_batch": _fit("batching-throughput", "roofline", tags=["roofline", "memory-bandwidth"]),
    "quantized_kv_cache": _fit("cache-levers", "quantization", tags=["kv-cache", "scales"]),
    "mla_kv_cache": _fit("mla", tags=["kv-cache"]),
    "tp_cache_per_gpu": _fit("parallelism", tags=["kv-cache", "tensor-parallelism"]),
    "speculative_tokens": _fit("speculative-decoding"),
    "cost_per_million_tokens": _fit("serving-metrics", tags=["cost", "throughput", "capacity-planning"]),
    "low_precision_weight_bytes": _fit("low-precision-formats", "blackwell", tags=["fp4", "nvfp4", "mxfp4"]),
    "eagle_acceptance": _fit("speculative-decoding-modern", tags=["eagle", "acceptance"]),
    "all_to_all_bytes": _fit(
        "moe-inference", "blackwell", "wide-expert-parallelism", tags=["expert-parallelism"]
    ),
    "hybrid_state_vs_kv": _fit("hybrid-linear-attention", tags=["hybrid", "memory"]),
    "lora_adapter_bytes": _fit("multi-lora-serving", tags=["memory", "adapters"]),
    "ring_block_size": _fit("context-parallelism", tags=["roofline", "gqa"]),
    "kv_load_time": _fit("kv-routing-tiered-storage", tags=["kv-offload"]),
    "kv_load_vs_recompute": _fit("kv-routing-tiered-storage", tags=["kv-offload", "recompute"]),
}

# Topics some of whose cards can be asked as a numeric question, and the kinds declared for each.
TOPIC_GENERATORS: dict[str, tuple[str, ...]] = {}
for _name, _declared in FITS.items():
    for _topic in _declared.topics:
        TOPIC_GENERATORS[_topic] = (*TOPIC_GENERATORS.get(_topic, ()), _name)


def has_numeric(topic: str) -> bool:
    """Whether some card of this topic can be asked as a numeric problem."""
    return topic in TOPIC_GENERATORS


def kinds_for(card: Card) -> tuple[str, ...]:
    """The kinds of numeric problem that belong to this card: () when none does."""
    return tuple(
        name for name in TOPIC_GENERATORS.get(card.topic, ()) if FITS[name].fits(card.topic, card.tags)
    )


def fits(card: Card) -> bool:
    return bool(kinds_for(card))


def generate(topic: str, rng: random.Random) -> NumericQuestion | None:
    """A numeric question of some kind declared for this topic, or None when the topic has none."""
    names = TOPIC_GENERATORS.get(topic)
    if not names:
        return None
    return GENERATORS[rng.choice(names)](rng)


def generate_for(card: Card, rng: random.Random) -> NumericQuestion | None:
    """A numeric question that belongs to this card, or None when no kind fits it."""
    names = kinds_for(card)
    if not names:
        return None
    return GENERATORS[rng.choice(names)](rng)


_NUMBER = re.compile(r"^\s*([-+]?(?:\d[\d,_ ]*)?\.?\d+(?:[eE][-+]?\d+)?)\s*([A-Za-zµμ%$][\w µμ/%$-]*)?\s*$")
# A comma is read as a thousands separator only where it can be nothing else: groups of exactly
# three digits after a first group of one to three ("1,024", "131,072.5"). "0,70" or "1,5" may be a
# decimal comma (70 or 0.7?) and "1.234,5" mixes both conventions: asked again, never guessed.
_THOUSANDS = re.compile(r"^[-+]?\d{1,3}(?:,\d{3})+(?:\.\d*)?(?:[eE][-+]?\d+)?$")
_DECIMAL_COMMA = re.compile(r"^\s*[-+]?\d[\d.]*,\d")


class Unreadable(ValueError):
    """A typed answer that is not one number: the message says how to write it."""


NOT_A_NUMBER = "That is not a number we can read: type digits, e.g. 2.5 or 1,024."


def _ambiguous(written: str) -> Unreadable:
    return Unreadable(
        f"{written!r} could be read two ways: a comma is read only as a thousands separator between "
        "groups of three digits (1,024). For a decimal, type a point, e.g. 0.70."
    )


def read_answer(text: str) -> tuple[float, str | None]:
    """'2.5', '2.5 GiB', '4.02 ms', '295 FLOP/byte', '3e9', '1,024' -> (value, unit or None).

    Raises Unreadable for text that is not a number, a comma that could be a decimal comma, and a
    negative number (no size, time, count or ratio asked here is below zero)."""
    cleaned = text.replace("\u202f", "").replace("\u00a0", "").strip()
    if _DECIMAL_COMMA.match(cleaned) and not _THOUSANDS.match(cleaned.split()[0]):
        raise _ambiguous(cleaned.split()[0])
    match = _NUMBER.match(cleaned[1:] if cleaned.startswith("$") else cleaned)  # "$0.28": a price
    if not match:
        raise Unreadable(NOT_A_NUMBER)
    raw = match.group(1).replace("_", "").replace(" ", "")
    if "," in raw and not _THOUSANDS.match(raw):
        raise _ambiguous(raw)
    try:
        value = float(raw.replace(",", ""))
    except ValueError as exc:
        raise Unreadable(NOT_A_NUMBER) from exc
    if not math.isfinite(value):
        raise Unreadable(NOT_A_NUMBER)
    if value < 0:
        raise Unreadable("A size, time or count is never negative: type the number without the minus sign.")
    return value, (match.group(2).strip() if match.group(2) else None)


def parse_answer(text: str) -> tuple[float, str | None] | None:
    """read_answer, with None for anything it refuses."""
    try:
        return read_answer(text)
    except Unreadable:
        return None


def _slip_hint(ratio: float, payload: dict[str, Any]) -> str:
    """A guess at the usual slip behind a wrong answer, from how far off it is."""

    def near(target: float) -> bool:
        return abs(ratio / target - 1) < 0.01

    dimension = payload["dimension"]
    generator = payload.get("generator", "")
    if dimension == "bytes":
        if near(GIB_PER_GB) or near(1 / GIB_PER_GB):
            return " Check GB against GiB: 1 GiB = 2^30 bytes, about 1.074 GB."
        if any(near(base**k) for base in (1000, 1024) for k in (-3, -2, -1, 1, 2, 3)):
            return " The digits are right: check the unit."
        if near(2) or near(0.5):
            return " Off by a factor of 2: both K and V are cached; check the bytes per element too."
        return ""
    if dimension == "time":
        if any(near(1000.0**k) for k in (-2, -1, 1, 2)):
            return " The digits are right: check the unit (1 ms = 1,000 us; 1 s = 1,000 ms)."
        if near(GIB_PER_GB) or near(1 / GIB_PER_GB):
            return " Data-sheet bandwidths are decimal: 3.35 TB/s is 3.35 x 10^12 bytes/s, and GB means 10^9."
        if near(2) or near(0.5):
            return " Off by a factor of 2: check the bytes per parameter (bf16 is 2, int8 1, int4 0.5)."
        return ""
    if dimension == "intensity":
        if any(near(1000.0**k) for k in (-1, 1)):
            return (
                " Check the prefixes: tera is 10^12 and giga 10^9, so TFLOP/s over GB/s has a factor 1,000."
            )
        return ""
    if generator == "crossover_batch" and (near(2) or near(0.5)):
        return (
            " Off by a factor of 2: a parameter does 2 FLOPs per sequence (multiply, add); check its bytes."
        )
    if generator == "speculative_tokens" and abs(float(payload["answer"]) * (1 - ratio) - 1) < 0.01:
        return " Count the token the target model adds itself: a round yields the accepted drafts plus one."
    return ""


def check_answer(payload: dict[str, Any], text: str, unit: str | None) -> NumericCheck:
    """Read the user's number and unit, convert to the base unit and compare within the tolerance."""
    try:
        value, written = read_answer(text or "")
    except Unreadable as refused:
        return NumericCheck(False, None, str(refused))
    units: list[str] = payload["units"]
    dimension = payload["dimension"]
    system = UNIT_SYSTEMS.get(dimension)  # None for a count
    if written:
        # A unit typed after the number wins over the menu; a count takes any word as its label.
        known = canonical_unit(written)
        if system is not None:
            if known is None:
                return NumericCheck(
                    False,
                    None,
                    f"{written!r} is not a unit of {dimension_word(dimension)}: use one of "
                    f"{', '.join(units)}.",
                )
            if known[0] != dimension:
                return NumericCheck(
                    False,
                    None,
                    f"This asks for {DIMENSION_NAMES[dimension]}, not {DIMENSION_NAMES[known[0]]}: "
                    f"use one of {', '.join(units)}.",
                )
            unit = known[1]
        else:
            if known is not None:
                return NumericCheck(
                    False, None, f"This asks for a count of {units[0]}, not {DIMENSION_NAMES[known[0]]}."
                )
            unit = units[0]
    if system is None or unit not in system:
        unit = units[0] if unit not in units else unit
    assert unit is not None
    given = value * system[unit] if system is not None and unit in system else value
    answer = float(payload["answer"])
    allowed = max(float(payload["tolerance"]) * abs(answer), float(payload.get("abs_tolerance", 0.0)))
    if abs(given - answer) <= allowed + 1e-9 * max(1.0, abs(answer)):
        return NumericCheck(True, given, f"Right: {payload['answer_text']}.")
    tolerance = float(payload["tolerance"])
    within = f"within {tolerance:.1%}" if tolerance else "exactly"
    hint = _slip_hint(given / answer, payload) if answer and given else ""
    return NumericCheck(
        False,
        given,
        f"Not quite: you gave {_n(value)} {unit}; the answer is {payload['answer_text']} ({within}).{hint}",
    )


def dimension_word(dimension: str) -> str:
    return {"bytes": "memory", "time": "time", "intensity": "arithmetic intensity"}[dimension]

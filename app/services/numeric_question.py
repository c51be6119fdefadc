"""What a numeric question is, and the units its answer may be given in.

Shared by the generators (app/services/numeric_memory.py, app/services/numeric_serving.py)
and the checker (app/services/numeric.py). Every answer is stored in a base unit: bytes,
seconds, FLOP/byte, or a plain count; the unit is part of the check.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from app.content.shapes import ModelShape

# Units of memory, in bytes. Binary (KiB = 2^10) and decimal (KB = 10^3) are different answers.
BYTE_UNITS: dict[str, int] = {
    "bytes": 1,
    "KiB": 2**10,
    "MiB": 2**20,
    "GiB": 2**30,
    "TiB": 2**40,
    "KB": 10**3,
    "MB": 10**6,
    "GB": 10**9,
    "TB": 10**12,
}
_UNIT_ALIASES = {"b": "bytes", "byte": "bytes", "bytes": "bytes"} | {u.lower(): u for u in BYTE_UNITS}

GIB_PER_GB = 2**30 / 10**9
DTYPES = {"fp32": 4, "fp16": 2, "bf16": 2, "fp8": 1}

# Units of time, in seconds, and of arithmetic intensity. The data sheets' "us" is written
# here as both "us" and "µs".
TIME_UNITS: dict[str, float] = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6}
INTENSITY_UNITS: dict[str, float] = {"FLOP/byte": 1.0}
# dimension -> its units; a "count" has none (its unit is a label such as "sequences").
UNIT_SYSTEMS: dict[str, dict[str, float]] = {
    "bytes": {k: float(v) for k, v in BYTE_UNITS.items()},
    "time": TIME_UNITS,
    "intensity": INTENSITY_UNITS,
}
DIMENSION_NAMES = {"bytes": "an amount of memory", "time": "a time", "intensity": "an arithmetic intensity"}


def canonical_unit(written: str) -> tuple[str, str] | None:
    """'gib' -> ('bytes', 'GiB'), 'MS' -> ('time', 'ms'), 'flop/byte' -> ('intensity', 'FLOP/byte')."""
    text = written.strip()
    lowered = text.lower().replace(" ", "")
    if lowered in _UNIT_ALIASES:
        return "bytes", _UNIT_ALIASES[lowered]
    for unit in TIME_UNITS:
        if lowered == unit.lower() or lowered in {"sec", "secs", "seconds", "second"} and unit == "s":
            return "time", unit
    if lowered in {"msec", "millisecond", "milliseconds"}:
        return "time", "ms"
    if lowered in {"usec", "microsecond", "microseconds", "μs"}:
        return "time", "us"
    if lowered in {"flop/byte", "flops/byte", "flop/b", "flops/b", "flop/bytes", "flops/bytes"}:
        return "intensity", "FLOP/byte"
    return None


@dataclass(frozen=True)
class NumericQuestion:
    generator: str
    prompt: str  # Markdown
    answer: float  # in the base unit: bytes when dimension is "bytes", else a count
    dimension: str  # "bytes" or "count"
    unit: str  # the unit the worked answer is stated in
    units: list[str]  # what the user may pick
    tolerance: float  # relative, e.g. 0.01 for 1%
    solution: list[str]  # Markdown steps
    answer_text: str  # the answer as a person would state it
    abs_tolerance: float = 0.0
    config: dict[str, Any] = field(default_factory=dict)  # the model's config.json fields, when one is used

    def to_payload(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class NumericCheck:
    correct: bool
    given: float | None  # the answer converted to the base unit; None when it could not be read
    message: str


def _n(value: float) -> str:
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.4g}"


def _bytes(value: float, unit: str) -> str:
    """2 decimals from 1 up, 3 significant digits below: always within the 1% tolerance."""
    scaled = value / BYTE_UNITS[unit]
    return f"{scaled:,.2f} {unit}" if scaled >= 1 else f"{scaled:.3g} {unit}"


# The units a memory answer may be given in, unless a problem says otherwise.
MEMORY_UNITS = ("GiB", "GB", "MiB", "MB")


def memory_question(
    *,
    generator: str,
    prompt: str,
    answer: float,
    solution: list[str],
    unit: str = "GiB",
    units: Sequence[str] = MEMORY_UNITS,
    tolerance: float = 0.01,
    config: dict[str, Any] | None = None,
) -> NumericQuestion:
    """A problem whose answer is an amount of memory (in bytes), stated in `unit` as a person would."""
    return NumericQuestion(
        generator=generator,
        prompt=prompt,
        answer=answer,
        dimension="bytes",
        unit=unit,
        units=list(units),
        tolerance=tolerance,
        solution=solution,
        answer_text=_bytes(answer, unit),
        config=config or {},
    )


def count_question(
    *,
    generator: str,
    prompt: str,
    answer: float,
    unit: str,
    solution: list[str],
    answer_text: str | None = None,
    tolerance: float = 0.0,
    abs_tolerance: float = 0.0,
    config: dict[str, Any] | None = None,
) -> NumericQuestion:
    """A problem whose answer is a plain count labelled `unit` ("sequences", "x"): exact unless a
    tolerance is given."""
    return NumericQuestion(
        generator=generator,
        prompt=prompt,
        answer=answer,
        dimension="count",
        unit=unit,
        units=[unit],
        tolerance=tolerance,
        abs_tolerance=abs_tolerance,
        solution=solution,
        answer_text=answer_text if answer_text is not None else f"{_n(answer)} {unit}",
        config=config or {},
    )


def config_json(model: ModelShape) -> dict[str, Any]:
    """The shape fields of the model's Hugging Face config.json."""
    if model.name.startswith("GPT-2"):
        return {"n_layer": model.layers, "n_head": model.q_heads, "n_embd": model.hidden}
    return {
        "num_hidden_layers": model.layers,
        "num_attention_heads": model.q_heads,
        "num_key_value_heads": model.kv_heads,
        "hidden_size": model.hidden,
    }

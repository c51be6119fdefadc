"""Numbers with units in free text, read as quantities, for the key-point matcher.

An embedding model reads "4.5 GiB" and "2.25 GiB" (or "4.5 GB") as nearly the same text, and
reads a terse "4.5 GiB, about 9x the fp32 weights" as far from a long key point that states
4.50 GiB among other things. So the matcher compares the numbers itself: each is converted to
its dimension's base unit (bytes, seconds, FLOP, ...) and two agree when they are within the
card's tolerance. Binary and decimal prefixes are different units (1 GiB = 2^30 bytes, 1 GB =
10^9 bytes, 7.4% apart), as on the cards and in the numeric problems (app/services/numeric.py).

What is not a quantity here, as in the figure audit (app/content/figure_audit.py): a bare
number (a layer count, a year), a product written "2 x 12" (spaced x), an element's width
("4 bytes", "2 bytes": a definition) and "2 FLOPs" per parameter (a convention).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

# How far apart two figures may be and still agree, when the card asks no numeric problem
# whose tolerance it could lend (app/services/numeric.py's problems use 0.5% to 2%).
DEFAULT_TOLERANCE = 0.02
# A hedged figure ("about 9x", "~10%") is an estimate: it does not contradict the card when
# within this share of one of its figures. Memory sizes are not widened: a figure 7% off one
# in GiB is most often the same number in GB, the slip the cards warn about.
HEDGED_BAND = 0.10

# written unit (lower case) -> (dimension, factor to the dimension's base unit)
_UNITS: dict[str, tuple[str, float]] = {
    "bytes": ("bytes", 1.0),
    "byte": ("bytes", 1.0),
    **{u.lower(): ("bytes", float(2 ** (10 * (i + 1)))) for i, u in enumerate(["KiB", "MiB", "GiB", "TiB"])},
    **{
        u.lower(): ("bytes", float(10 ** (3 * (i + 1)))) for i, u in enumerate(["KB", "MB", "GB", "TB", "PB"])
    },
    **{
        f"{u.lower()}/s": ("bytes/s", float(10 ** (3 * (i + 1))))
        for i, u in enumerate(["KB", "MB", "GB", "TB"])
    },
    **{
        f"{u.lower()}/s": ("bytes/s", float(2 ** (10 * (i + 1)))) for i, u in enumerate(["KiB", "MiB", "GiB"])
    },
    "ns": ("time", 1e-9),
    "us": ("time", 1e-6),
    "µs": ("time", 1e-6),
    "μs": ("time", 1e-6),
    "microseconds": ("time", 1e-6),
    "ms": ("time", 1e-3),
    "msec": ("time", 1e-3),
    "milliseconds": ("time", 1e-3),
    "s": ("time", 1.0),
    "sec": ("time", 1.0),
    "seconds": ("time", 1.0),
    "minutes": ("time", 60.0),
    "flop": ("flop", 1.0),
    "flops": ("flop", 1.0),
    "gflop": ("flop", 1e9),
    "tflop": ("flop", 1e12),
    "pflop": ("flop", 1e15),
    "gflops": ("flop/s", 1e9),
    "tflops": ("flop/s", 1e12),
    "pflops": ("flop/s", 1e15),
    "gflop/s": ("flop/s", 1e9),
    "tflop/s": ("flop/s", 1e12),
    "pflop/s": ("flop/s", 1e15),
    "flop/byte": ("flop/byte", 1.0),
    "flops/byte": ("flop/byte", 1.0),
    "flop/b": ("flop/byte", 1.0),
    "tokens/s": ("tokens/s", 1.0),
    "token/s": ("tokens/s", 1.0),
    "tok/s": ("tokens/s", 1.0),
    "x": ("ratio", 1.0),
    "×": ("ratio", 1.0),
    "-fold": ("ratio", 1.0),
    "times": ("ratio", 1.0),
    "%": ("percent", 1.0),
    "percent": ("percent", 1.0),
    # a count with a suffix: 124M parameters, 6.74B, 128K tokens
    "k": ("count", 1e3),
    "m": ("count", 1e6),
    "b": ("count", 1e9),
    "t": ("count", 1e12),
}
_SUFFIXES = {"k", "m", "b", "t"}
_NOT_WIDENED = {"bytes", "bytes/s"}

_UNIT_RE = "|".join(re.escape(u) for u in sorted(_UNITS, key=len, reverse=True))
_QUANTITY = re.compile(
    r"(?<![\w.,/^-])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(\s?)(" + _UNIT_RE + r")(?![\w/])",
    re.IGNORECASE,
)
_HEDGE = re.compile(
    r"(?:about|around|roughly|approximately|approx\.?|nearly|almost|some|close to|on the order of|~|≈)\s*$",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Quantity:
    value: float  # in the dimension's base unit
    dimension: str  # bytes | bytes/s | time | flop | flop/s | flop/byte | tokens/s | ratio | percent | count
    text: str  # as written
    rounding: float  # half a unit of the last digit written, in the base unit (0 for an integer)
    hedged: bool  # "about", "~" and the like just before it
    number: float = 0.0  # the number as written, in its own unit
    digits: int = 0  # significant digits written ("4.50": 3, "9x": 1)
    unit: str = ""  # the unit as written, lower case


def quantities(text: str) -> list[Quantity]:
    """The numbers with a unit in `text`, in order."""
    found = []
    for match in _QUANTITY.finditer(text):
        whole, frac, space, unit = match.group(1), match.group(2) or "", match.group(3), match.group(4)
        key = unit.lower()
        if key in ("x", "×") and space:
            continue  # "2 x 12 x 64", "400 × 0.025": a product
        if key in _SUFFIXES and (space or unit not in ("K", "M", "B", "T", "k")):
            continue  # a count's suffix is written on the number, upper case ("124M"; "128k" too)
        if key in ("bytes", "byte") and not frac and whole in ("1", "2", "4", "8"):
            continue  # an element's width (fp16 is 2 bytes): a definition, not a figure
        if key in ("flop", "flops") and not frac and whole == "2":
            continue  # 2 FLOPs per parameter: the convention
        dimension, factor = _UNITS[key]
        number = float((whole + frac).replace(",", ""))
        rounding = 0.5 * 10 ** -(len(frac) - 1) * factor if frac else 0.0
        hedged = bool(_HEDGE.search(text[max(0, match.start() - 20) : match.start()]))
        digits = len((whole + frac).replace(",", "").replace(".", "").lstrip("0"))
        found.append(
            Quantity(
                number * factor,
                dimension,
                match.group(0),
                rounding,
                hedged,
                number=number,
                digits=digits,
                unit=key,
            )
        )
    return found


def agree(given: Quantity, stated: Quantity, tolerance: float) -> bool:
    """Whether an answer's figure states the card's: same dimension, within the tolerance (and the
    rounding the card printed its figure with: "4.50 GiB" stands for 4.495 to 4.505)."""
    if given.dimension != stated.dimension:
        return False
    return abs(given.value - stated.value) <= tolerance * abs(stated.value) + stated.rounding + 1e-12


def near(given: Quantity, stated: Quantity, tolerance: float) -> bool:
    """Agreement, widened to HEDGED_BAND for a hedged figure that is not a memory size."""
    if given.hedged and given.dimension not in _NOT_WIDENED:
        tolerance = max(tolerance, HEDGED_BAND)
    return agree(given, stated, tolerance)


def swapped(given: Quantity, stated: Quantity, tolerance: float) -> bool:
    """The card's number of GiB written as GB (or MB for MiB, and back): the slip the cards warn about."""
    if given.dimension not in _NOT_WIDENED or given.dimension != stated.dimension:
        return False
    if given.unit == stated.unit or given.unit[:1] != stated.unit[:1] or given.unit[:1] == "b":
        return False
    scale = stated.value / stated.number if stated.number else 1.0
    return abs(given.number - stated.number) <= tolerance * stated.number + stated.rounding / scale


@dataclass(frozen=True)
class NumberCheck:
    stated: bool  # the answer states the point's own figures (ones no other point has): see check_point
    contradicted: bool  # the answer states, where it speaks to the point, a figure the card does not


def check_point(
    answer: Sequence[Quantity],
    local: Iterable[Quantity],
    point: Sequence[Quantity],
    card: Sequence[Quantity],
    tolerance: float,
) -> NumberCheck:
    """`answer`: the whole answer's figures; `local`: those of the part of it that matches the point
    best; `point`: the point's figures; `card`: every figure of the card's points.

    A figure the point shares with another point of the card says nothing about which point is
    covered, so only the point's own figures count as stated. A local figure of a dimension the
    point has contradicts it when it is near none of the card's figures (a figure of another point
    is that point's, not a wrong one for this point). Anywhere in the answer, the number of one of
    the point's figures with the other prefix (16.00 GB for 16.00 GiB) contradicts it."""
    own = [
        q
        for q in point
        if sum(agree(c, q, tolerance) for c in card) <= sum(agree(p, q, tolerance) for p in point)
    ]
    matched = [q for q in own if any(agree(a, q, tolerance) for a in answer)]
    # "8x", "60%" or "13B" turn up in wrong answers too ("Jamba's cache is 8x smaller, so it fits
    # 8x the batch"): a figure of one or two digits is evidence only with another of the point's,
    # or when it is the point's only figure ("72 KiB per token").
    stated = len(matched) >= min(2, len(own)) > 0 or any(q.digits >= 3 for q in matched)
    dims = {q.dimension for q in point}
    contradicted = any(
        a.dimension in dims and not any(near(a, c, tolerance) for c in card) for a in local
    ) or any(swapped(a, q, tolerance) for a in answer for q in point)
    return NumberCheck(stated=stated, contradicted=contradicted)

"""What the stateful batteries (continuous-batching, radix-prefix-cache) share about traces: a
trace is one observation per op of a script, the submission's compared with the reference's."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from graders.checks.report import Mismatch


def first_difference(got: Sequence[Any], want: Sequence[Any]) -> int | None:
    """The index of the first op whose observation differs (None: the traces agree)."""
    for i, w in enumerate(want):
        if i >= len(got) or got[i] != w:
            return i
    return None


def figures_if_same(got: Sequence[Any], want: Sequence[Any], figures: str) -> str:
    """The figure test's line when the traces agree; else Mismatch with the figures and the first
    step that went wrong (the last observation, which says what differed, when it can)."""
    if got != want:
        last = got[-1] if got else None
        why = getattr(last, "text", "the traces differ: see the tests above")
        raise Mismatch(f"{figures} ({why})")
    return figures

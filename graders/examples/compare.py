"""Compare one case's outputs with the reference's, and summarise both for the page.

A summary is small on purpose (shape, dtype, the first few values): the page shows it
beside the user's, and a Run's answer stays a few kilobytes whatever the shapes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from graders.checks.attention_common import compare, describe, fail
from graders.checks.report import ATOL, RTOL, CheckReport, Mismatch
from graders.examples.spec import Compared

LEADING = 6  # values shown of each output


@dataclass(frozen=True)
class Summary:
    """What a value looks like: `text` always; shape, dtype and leading values for arrays."""

    text: str
    shape: list[int] | None = None
    dtype: str | None = None
    leading: list[float | int] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"text": self.text, "shape": self.shape, "dtype": self.dtype, "leading": self.leading}


@dataclass(frozen=True)
class OutputResult:
    what: str
    passed: bool
    message: str
    expected: Summary
    got: Summary
    max_abs_diff: float | None  # None when the shapes differ or a value is not numeric
    tolerance: str  # "exact" or "rtol=0.0001, atol=1e-05"
    # Where the two first differ beyond the tolerance: {"index": [...], "got": x, "expected": y}
    first_mismatch: dict[str, Any] | None = None
    # A step-by-step trace: [{"step", "got", "expected", "differs"}], the first differing row marked.
    trace: list[dict[str, Any]] | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "trace": self.trace,
            "what": self.what,
            "passed": self.passed,
            "message": self.message,
            "expected": self.expected.to_json(),
            "got": self.got.to_json(),
            "max_abs_diff": self.max_abs_diff,
            "tolerance": self.tolerance,
            "first_mismatch": self.first_mismatch,
        }


def _number(x: Any) -> float | int:
    value = x.item() if hasattr(x, "item") else x
    if isinstance(value, float):
        return float(f"{value:.6g}")
    return int(value) if isinstance(value, int | bool) else float(value)


def summarize(value: Any) -> Summary:
    if isinstance(value, np.ndarray):
        value = torch.from_numpy(np.array(value)) if value.dtype.kind in "biuf" else value
    if isinstance(value, torch.Tensor):
        flat = value.detach().reshape(-1)[:LEADING]
        leading = [_number(x) for x in flat]
        shape = [int(n) for n in value.shape]
        more = ", ..." if value.numel() > LEADING else ""
        dtype = str(value.dtype).removeprefix("torch.")
        text = f"tensor {tuple(shape)} {dtype}: [{', '.join(map(str, leading))}{more}]"
        return Summary(text, shape, dtype, leading)
    if isinstance(value, bool) or value is None:
        return Summary(repr(value))
    if isinstance(value, int | float):
        return Summary(repr(value), leading=[_number(value)])
    if isinstance(value, list | tuple) and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        shown = ", ".join(map(str, value[: LEADING * 2])) + (", ..." if len(value) > LEADING * 2 else "")
        return Summary(f"[{shown}] ({len(value)} items)", [len(value)], "int", list(value[:LEADING]))
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):  # a trace's rows
        return Summary(f"{len(value)} rows: " + " | ".join(value[:3]) + (" | ..." if len(value) > 3 else ""))
    text = describe(value) if not isinstance(value, list | tuple | dict) else type(value).__name__
    if isinstance(value, list | tuple | dict):
        text += f" of {len(value)} items"
    return Summary(text)


def _as_double(value: Any) -> torch.Tensor | None:
    try:
        return torch.as_tensor(np.asarray(value) if isinstance(value, list | np.ndarray) else value).double()
    except (TypeError, ValueError, RuntimeError):
        return None


def _difference(got: Any, want: Any, exact: bool) -> tuple[float | None, dict[str, Any] | None]:
    """The largest absolute difference, and the first place beyond the tolerance (None: none)."""
    g, w = _as_double(got), _as_double(want)
    if g is None or w is None or g.shape != w.shape:
        return None, None
    if g.numel() == 0:
        return 0.0, None
    diff = (g - w).abs().nan_to_num(nan=float("inf"))
    beyond = diff > (0 if exact else ATOL + RTOL * w.abs())
    first = None
    if beyond.any():
        index = tuple(int(i) for i in beyond.nonzero()[0])
        first = {"index": list(index), "got": _number(g[index]), "expected": _number(w[index])}
    return float(f"{diff.max().item():.4g}"), first


def _exact(item: Compared) -> tuple[bool, str]:
    got, want = item.got, item.want
    if isinstance(want, torch.Tensor):
        if not isinstance(got, torch.Tensor | np.ndarray):
            return False, f"{item.what} should be a tensor, got {describe(got)}"
        tensor = torch.as_tensor(got)
        if tensor.dtype != want.dtype:
            return False, f"{item.what} has dtype {tensor.dtype}, expected {want.dtype}"
        if tensor.shape != want.shape:
            return False, f"{item.what} has shape {tuple(tensor.shape)}, expected {tuple(want.shape)}"
        if not torch.equal(tensor, want):
            index = tuple(int(i) for i in (tensor != want).nonzero()[0])
            return False, (
                f"{item.what} differs at {int((tensor != want).sum())} places; first at index {index}: "
                f"got {tensor[index].item()}, expected {want[index].item()}"
            )
        return True, ""
    if item.labels:
        first = _first_row(got, want)
        if first is None:
            return True, ""
        return False, (
            f"{item.what}: the first difference is at row {first + 1} ({item.labels[first]}): "
            f"yours {got[first] if first < len(got) else '(nothing)'}, the reference {want[first]}"
        )
    if isinstance(want, list):
        if type(got) is not list or any(isinstance(v, bool) or not isinstance(v, int) for v in got):
            return False, f"{item.what} should be a list of ints, got {describe(got)}"
        if got != want:
            at = next((i for i, (a, b) in enumerate(zip(got, want, strict=False)) if a != b), None)
            where = (
                f"first difference at item {at}"
                if at is not None
                else f"{len(got)} items, expected {len(want)}"
            )
            return False, f"{item.what} is {got}, expected {want} ({where})"
        return True, ""
    if isinstance(got, bool) or not isinstance(got, int | np.integer):
        return False, f"{item.what} should be an int, got {describe(got)}"
    if int(got) != want:
        return False, f"{item.what} is {int(got)}, expected {want}"
    return True, ""


def _first_row(got: Any, want: list[str]) -> int | None:
    rows = list(got) if isinstance(got, list) else []
    return next((i for i, w in enumerate(want) if i >= len(rows) or rows[i] != w), None)


def _trace(item: Compared) -> list[dict[str, Any]]:
    got = [str(g) for g in item.got] if isinstance(item.got, list) else []
    first = _first_row(got, item.want)
    return [
        {
            "step": label,
            "got": got[i] if i < len(got) else "",
            "expected": item.want[i],
            "differs": got[i] != item.want[i] if i < len(got) else True,
            "first": i == first,
        }
        for i, label in enumerate(item.labels)
    ]


def judge(item: Compared, report: CheckReport) -> OutputResult:
    """Compare one output; a close-enough float tensor passes with the contract's tolerance."""
    tolerance = "exact" if item.exact else f"rtol={RTOL}, atol={ATOL}"
    if item.exact:
        passed, message = _exact(item)
    else:
        try:
            comparison = compare(item.got, item.want, item.what, item.variants)
            passed, message = comparison.ok, ""
            if not passed:
                fail(report, comparison, comparison.matches[0] if comparison.matches else (), item.hint)
        except Mismatch as exc:
            passed, message = False, str(exc)
    largest, first = _difference(item.got, item.want, item.exact)
    return OutputResult(
        item.what,
        passed,
        message,
        expected=summarize(item.want),
        got=summarize(item.got),
        max_abs_diff=largest,
        tolerance=tolerance,
        first_mismatch=first,
        trace=_trace(item) if item.labels else None,
    )

"""mla-decode's absorption rule on one decode call: when it applies, what a call cost, the verdict.

graders/sandbox/footprint.py's recorder reports the largest floating-point tensor a call built,
which must hold fewer than B * H * S * min(d_nope, d_v) numbers where S makes that well above the
latent cache, the scores, the query and every weight (`rule_applies`). The recorder runs in the
submission's process, so where the kernel can say, `measured_call` also reads the peak of that
process's resident memory around the call (session.peak_watch(), graders/sandbox/outside.py), less
the code pages the call first touched, and a call above `resident_budget` fails whatever the
recorder said (`expect_absorbed`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from graders.checks.mla_decode_variants import PER_HEAD_KEYS, PER_HEAD_MEMORY, PER_HEAD_VALUES
from graders.checks.report import CheckReport, Mismatch
from graders.reference.mla import MLADims
from graders.sandbox import outside
from graders.sandbox.protocol import SubmissionLink

ENTRY_POINT = "mla_attention"
RULE_MARGIN = 4  # the rule decides where per-head tensors are this many times every allowed tensor
MIB = 1 << 20


def rule_applies(dims: MLADims, B: int, S: int) -> bool:
    """The contract's condition: per-head tensors well above the latent cache, the scores, the query
    and every weight (the only sizes an absorbed decode call needs)."""
    H = dims.n_heads
    allowed = max(
        B * S * dims.d_c,
        B * S * dims.d_rope,
        B * H * S,
        B * H * max(dims.d_c, dims.d_nope + dims.d_rope),
        dims.d * H * (dims.d_nope + dims.d_rope),
        H * dims.d_c * max(dims.d_nope, dims.d_v),
        H * dims.d_v * dims.d,
    )
    return B * H * S * dims.per_head_size >= RULE_MARGIN * allowed


@dataclass
class Measured:
    """What one decode call cost: its largest tensor (the child's recorder) and, where the kernel
    can say, the bytes its process took beyond what it held when the call began."""

    largest: int
    resident: int | None


def measured_call(
    session: SubmissionLink, args: Sequence[Any], kwargs: dict[str, Any]
) -> tuple[Any, Measured]:
    """One call under the recorder, inside a PeakWatch; the code pages (RssFile) the call first
    touched are taken off: they hold torch's code, never the call's data."""
    watch = session.peak_watch()
    if watch is None:
        got, largest = session.call_measured(ENTRY_POINT, *args, **kwargs)
        return got, Measured(largest, None)
    with watch:
        code_before = outside.resident_file(watch.pid)
        got, largest = session.call_measured(ENTRY_POINT, *args, **kwargs)
    code_gained = max(0, outside.resident_file(watch.pid) - code_before)
    return got, Measured(largest, max(0, watch.above_start - code_gained))


def resident_budget(dims: MLADims, B: int, S: int, io_numbers: int) -> int:
    """Bytes a decode call may take at its peak: its inputs and outputs twice over (as received and
    as made), four score- or latent-sized tensors, and the measurement's slack."""
    H = dims.n_heads
    working = max(B * H * S, B * S * (dims.d_c + dims.d_rope))
    return outside.SLACK_BYTES + 2 * 4 * io_numbers + 4 * 4 * working


def per_head_kind(dims: MLADims, B: int, S: int, largest: int) -> str:
    """Values when the largest tensor is exactly every head's values for every position, else keys."""
    values = B * dims.n_heads * S * dims.d_v
    return PER_HEAD_VALUES if largest == values and dims.d_v != dims.d_nope else PER_HEAD_KEYS


def expect_absorbed(
    report: CheckReport, dims: MLADims, B: int, S: int, measured: Measured, budget: int | None, what: str
) -> None:
    """The absorption rule on one decode call. The recorder's largest tensor names what was built
    and its size; the kernel's count (where `budget` is given) decides whatever the recorder said."""
    H, size = dims.n_heads, dims.per_head_size
    limit = B * H * S * size
    kernel = ""
    over_budget = budget is not None and measured.resident is not None and measured.resident > budget
    if measured.resident is not None and budget is not None:
        kernel = (
            f"; while it ran, the kernel counted {measured.resident / MIB:.1f} MiB taken by your code's "
            f"process beyond what it held when the call began, where the inputs, the output and the scores "
            f"fit in {budget / MIB:.1f} MiB"
        )
    if rule_applies(dims, B, S) and measured.largest >= limit:
        kind = per_head_kind(dims, B, S, measured.largest)
        sentence = (
            f"{kind}: the largest floating-point tensor your decode call made held {measured.largest:,} "
            f"numbers, and the contract allows fewer than B x H x S x min(d_nope, d_v) = {B} x {H} x {S} x "
            f"{size} = {limit:,} (per-head keys would be {B * H * S * dims.d_nope:,}, per-head values "
            f"{B * H * S * dims.d_v:,}; the latent cache is {B * S * dims.d_c:,}){kernel}"
        )
    elif over_budget:
        sentence = (
            f"{PER_HEAD_MEMORY}{kernel}; per-head keys for the {S} cached positions are "
            f"{4 * B * H * S * dims.d_nope / MIB:.1f} MiB ({B} x {H} x {S} x {dims.d_nope} float32) and "
            f"per-head values {4 * B * H * S * dims.d_v / MIB:.1f} MiB"
        )
    else:
        return
    report.diagnose(sentence)
    raise Mismatch(f"{what}: your code {sentence}")

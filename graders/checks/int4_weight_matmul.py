"""int4-weight-matmul: `quantize_int4`, `dequantize_int4` and `w4a16_matmul` (W4A16, GPTQ/AWQ style).

Every run draws fresh sizes and values. quantize_int4 gets a weight whose groups differ in
magnitude along K (so one scale per row, or groups taken with a stride, change the codes) with
four probe groups planted in it: a constant group (scale 1.0, not NaN), a group all positive
and one all negative (the zero point clamps to 0 and to 15, and then codes leave 0 .. 15 unless
they are clamped too), and a group on a power-of-two grid where max - min is exactly 15 steps
and -min / scale and many w / scale are exact halves with an even integer part (positive and
negative), so round-half-up, round-half-away and truncation each change a code. Its codes and
zeros are compared exactly, with their dtypes; the ValueError is tried for a K that is not a
multiple of group_size and for an odd group_size that divides an even K (which packs without
complaint when unchecked). dequantize_int4 and w4a16_matmul get random bytes (every nibble,
zeros above the codes, so uint8 subtraction wraps), compared with graders/reference/int4.py.

The footprint rule is measured on every w4a16_matmul call: graders/sandbox/footprint.py's
recorder reports the largest floating-point tensor the call built, which must hold at most
max(M * N, N * group_size) numbers when K > group_size. That recorder runs in the submission's
process, so it can only fail a call: on one large weight (N = 4096, K = 2048, whose float32 copy
is 32 MiB, four times outside.SLACK_BYTES) the grader also reads the kernel's peak of the
process's resident memory around the call (session.peak_watch()), and a call that took more
than a budget fitting the inputs, the output, the whole weight's codes in uint8 and a few
groups' floats fails whatever the recorder said. That call runs with the child's heap kept
(graders/sandbox/allocator.py): the worked solution's 32 groups of (N, group_size / 2) floats,
each a fresh mmap and its page faults under the child's fixed thresholds, took 95-155 ms, and
reused from the heap 16.5 ms, while the peak the kernel counts still holds whatever the call
held at once. It counts from the start of the call, not from
the unloaded process as tiled-attention does: code pages of torch first touched by the earlier
tests put 0 to 24 MiB between the two (measured), as much as the budget's margin here. What it
leaves unmeasured is memory taken before the call: a buffer allocated at import, before the
weight's shape is known. Small calls never face that budget: first-touched code pages
alone can exceed the slack there. The last test counts the call's multiply-adds and largest
tensor against the reference's, measured by the same counter (the cost report).
"""

from __future__ import annotations

import contextlib
from functools import cache, partial
from typing import Any

import torch

from graders.checks.attention_common import submission_context
from graders.checks.int4_weight_matmul_inputs import (
    Format,
    block_rows,
    expected_product,
    grid_activations,
    probe_weight,
    random_format,
)
from graders.checks.int4_weight_matmul_mistakes import (
    BIGGER_THAN_ALLOWED,
    CODES_NOT_CLAMPED,
    CONSTANT_GROUP,
    FULL_DEQUANT,
    KNOWN_MISTAKES,
    NO_VALUE_ERROR_K,
    NO_VALUE_ERROR_ODD,
    PACKED_NOT_UINT8,
    PER_ROW,
    QUANTIZE_MISTAKES,
    ZERO_NOT_CLAMPED,
    ZEROS_NOT_UINT8,
    dequantize_variants,
    quantize_variant,
    unclamped,
    wrong_only_where,
)
from graders.checks.report import CheckReport, Mismatch, as_tensor, close, explain_difference, run_test
from graders.checks.serving_common import Rng, call_entry, figure_test
from graders.reference.int4 import (
    dequantize_int4,
    largest_allowed,
    matmul_multiply_adds,
    quantize_int4,
    unpack,
    w4a16_matmul,
)
from graders.sandbox import outside
from graders.sandbox.outside import PeakWatch
from graders.sandbox.protocol import SubmissionError, SubmissionLink
from graders.sandbox.work_counter import counted_call

SLUG = "int4-weight-matmul"
ENTRY_POINT = "quantize_int4"
DEQUANTIZE, MATMUL = "dequantize_int4", "w4a16_matmul"
BIG = (4, 4096, 2048, 64)  # (M, N, K, group_size) of the test the kernel's count decides
COST = (8, 256, 512, 64)  # the cost report's shape
__all__ = ["ENTRY_POINT", "KNOWN_MISTAKES", "SLUG", "run"]


# --- quantize_int4 --------------------------------------------------------------------------------


def _name_quantize(
    w: torch.Tensor,
    group_size: int,
    got: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
    constant: torch.Tensor,
) -> str | None:
    packed, scales, zeros = got
    for mistake in QUANTIZE_MISTAKES:
        p, s, z = quantize_variant(w, group_size, mistake)
        if torch.equal(packed, p) and close(scales, s) and torch.equal(zeros.long(), z):
            return mistake
    want_p, want_s, want_z = quantize_int4(w, group_size)
    scales_wrong = ~torch.isclose(scales.double(), want_s.double(), rtol=1e-4, atol=1e-5)
    if wrong_only_where(scales_wrong, constant):
        return CONSTANT_GROUP
    if scales_wrong.any():
        return None
    codes, zero = unclamped(w, group_size)
    if wrong_only_where(zeros.long() != want_z.long(), (zero < 0) | (zero > 15)):
        return ZERO_NOT_CLAMPED
    out_of_range = ((codes < 0) | (codes > 15)).reshape(codes.shape[0], -1, 2).any(-1)  # (N, K // 2) bytes
    if torch.equal(zeros.long(), want_z.long()) and wrong_only_where(packed != want_p, out_of_range):
        return CODES_NOT_CLAMPED
    return None


def _judge_quantize(
    report: CheckReport, got: Any, w: torch.Tensor, group_size: int, constant: torch.Tensor
) -> None:
    if not isinstance(got, tuple | list) or len(got) != 3:
        raise Mismatch(f"quantize_int4 should return (packed, scales, zeros), got {type(got).__name__}")
    packed, scales, zeros = (as_tensor(v, n) for v, n in zip(got, ("packed", "scales", "zeros"), strict=True))
    want_p, want_s, want_z = quantize_int4(w, group_size)
    N, G = want_s.shape
    for tensor, name, mistake in ((packed, "packed", PACKED_NOT_UINT8), (zeros, "zeros", ZEROS_NOT_UINT8)):
        if tensor.dtype != torch.uint8:
            report.diagnose(mistake)
            raise Mismatch(f"{name} has dtype {tensor.dtype}, expected torch.uint8: it looks like {mistake}")
    if scales.shape != want_s.shape and scales.numel() == N and G > 1:
        report.diagnose(PER_ROW)
        raise Mismatch(f"scales has shape {tuple(scales.shape)}, expected {(N, G)}: it looks like {PER_ROW}")
    for tensor, want, name in (
        (packed, want_p, "packed"),
        (scales, want_s, "scales"),
        (zeros, want_z, "zeros"),
    ):
        if tensor.shape != want.shape:
            raise Mismatch(f"{name} has shape {tuple(tensor.shape)}, expected {tuple(want.shape)}")
    if close(scales, want_s) and torch.equal(zeros, want_z) and torch.equal(packed, want_p):
        return
    named = _name_quantize(w, group_size, (packed, scales, zeros), constant)
    if not close(scales, want_s):
        message = explain_difference(scales, want_s, "scales (N, K // group_size)")
    elif not torch.equal(zeros, want_z):
        n, g = (int(i) for i in (zeros != want_z).nonzero()[0])
        message = f"zeros[{n}, {g}] is {int(zeros[n, g])}, expected {int(want_z[n, g])}"
    else:
        codes, want_codes = unpack(packed), unpack(want_p)
        n, c = (int(i) for i in (codes != want_codes).nonzero()[0])
        message = (
            f"the code of w[{n}, {c}] = {float(w[n, c]):.6g} (in byte {c // 2}, "
            f"{'low' if c % 2 == 0 else 'high'} nibble) is {int(codes[n, c])}, "
            f"expected {int(want_codes[n, c])}"
        )
    if named:
        report.diagnose(named)
        message += f": it looks like {named}"
    raise Mismatch(message)


def _test_quantize(
    report: CheckReport, session: SubmissionLink, w: torch.Tensor, group_size: int, constant: torch.Tensor
) -> None:
    with submission_context(f"quantize_int4(w {tuple(w.shape)}, group_size={group_size})"):
        got = call_entry(session, ENTRY_POINT, w, group_size)
    _judge_quantize(report, got, w, group_size, constant)


def _test_value_error(
    report: CheckReport,
    session: SubmissionLink,
    rng: Rng,
    shape: tuple[int, int],
    group_size: int,
    mistake: str,
) -> None:
    w = rng.randn(*shape)
    try:
        call_entry(session, ENTRY_POINT, w, group_size)
    except SubmissionError as exc:
        if exc.type_name == "ValueError":
            return
        if exc.type_name != "NotImplementedError":  # an unwritten function has made no mistake yet
            report.diagnose(mistake)
        raise Mismatch(
            f"quantize_int4(w {shape}, group_size={group_size}) raised {exc}, expected ValueError: {mistake}"
        ) from None
    report.diagnose(mistake)
    raise Mismatch(
        f"quantize_int4(w {shape}, group_size={group_size}) returned, expected ValueError: {mistake}"
    )


# --- dequantize_int4 ------------------------------------------------------------------------------


def _test_dequantize(
    report: CheckReport,
    session: SubmissionLink,
    fmt: Format,
    group_size: int,
) -> None:
    packed, scales, zeros = fmt
    with submission_context(f"dequantize_int4(packed {tuple(packed.shape)}, ..., group_size={group_size})"):
        got = as_tensor(
            call_entry(session, DEQUANTIZE, packed, scales, zeros, group_size), "dequantize_int4's output"
        )
    want = dequantize_int4(packed, scales, zeros, group_size)
    if close(got, want):
        return
    message = explain_difference(got, want, "dequantize_int4's output (N, K)")
    name = next((m for m, wrong in dequantize_variants(*fmt, group_size) if close(got, wrong)), None)
    if name:
        report.diagnose(name)
        message += f": it looks like {name}"
    raise Mismatch(message)


# --- w4a16_matmul ---------------------------------------------------------------------------------


def resident_budget(M: int, N: int, K: int, group_size: int) -> int:
    """Bytes the call may hold at its peak beyond the process before its code was loaded: the inputs
    and the output twice over (as received and as made), the whole weight's codes in uint8 twice
    (nibbles split, then interleaved), a few tensors of the allowance, and the measurement's slack."""
    G = K // group_size
    io = N * K // 2 + 4 * (M * K + M * N + N * G) + N * G  # packed, x, the output, scales, zeros
    return outside.SLACK_BYTES + 2 * io + 2 * N * K + 3 * 4 * largest_allowed(M, N, group_size)


def _expect_resident_within(
    report: CheckReport, watch: PeakWatch, what: str, M: int, N: int, K: int, gs: int
) -> None:
    """Fail when the kernel saw the process hold more than the budget: this decides whatever the
    recorder in the child said (it explains a failure, it never passes one)."""
    budget = resident_budget(M, N, K, gs)
    if watch.above_start <= budget:
        return
    mib = 1 << 20
    sentence = (
        f"{FULL_DEQUANT}: while it ran, the kernel counted {watch.above_start / mib:.1f} MiB of memory "
        "taken by your code's process beyond what it held when the call began, while the whole "
        f"dequantized weight here (N x K = {N * K:,} float32) is {4 * N * K / mib:.1f} MiB and the inputs, "
        "the output, the weight's codes in uint8 and a few groups of floats fit in "
        f"{budget / mib:.1f} MiB; w4a16_matmul must dequantize one group of group_size columns at a time"
    )
    report.diagnose(sentence)
    raise Mismatch(f"{what}: your code {sentence}")


def _expect_footprint(report: CheckReport, largest: int, what: str, M: int, N: int, K: int, gs: int) -> None:
    allowed = largest_allowed(M, N, gs)
    if K <= gs or N * K <= allowed or largest <= allowed:
        return
    kind = FULL_DEQUANT if largest >= N * K else BIGGER_THAN_ALLOWED
    sentence = (
        f"{kind}: the largest floating-point tensor your w4a16_matmul made held {largest:,} numbers, "
        f"while the whole weight here is N x K = {N * K:,} and the allowance is "
        f"max(M x N, N x group_size) = {allowed:,}; "
        "dequantize one group of group_size columns at a time and add its product into the (M, N) output"
    )
    report.diagnose(sentence if kind == BIGGER_THAN_ALLOWED else FULL_DEQUANT)
    raise Mismatch(f"{what}: {sentence}")


def _judge_matmul(
    report: CheckReport, got: Any, x: torch.Tensor, fmt: Format, gs: int,
    what: str,
) -> None:  # fmt: skip
    out = as_tensor(got, f"{what}'s output")
    want = expected_product(x, fmt, gs)
    if close(out, want):
        return
    message = explain_difference(out, want, f"{what}'s output (M, N)")
    rows = block_rows(fmt[0].shape[0])
    block = tuple(t[:rows] for t in fmt)
    name = None
    if out.shape == want.shape:  # named from the first block of rows (the others repeat it)
        variants = dequantize_variants(block[0], block[1], block[2], gs)
        name = next((m for m, wrong in variants if close(out[:, :rows], x @ wrong.T)), None)
    if name:
        report.diagnose(name)
        message += f": it looks like {name}"
    raise Mismatch(message)


def _test_matmul(
    report: CheckReport, session: SubmissionLink, rng: Rng, M: int, N: int, K: int, gs: int, watched: bool
) -> None:
    """One measured call; `watched`: the kernel's count of resident memory decides too (the big test)."""
    x = grid_activations(rng, M, K)
    fmt = random_format(rng, N, K, gs)
    what = f"w4a16_matmul(x {(M, K)}, packed {(N, K // 2)}, ..., group_size={gs})"
    watch = session.peak_watch() if watched else None
    with submission_context(what), watch or contextlib.nullcontext():
        got, largest = session.call_measured(MATMUL, x, *fmt, gs, kept_heap=watched)
    if watch is not None:
        _expect_resident_within(report, watch, what, M, N, K, gs)
    _expect_footprint(report, largest, what, M, N, K, gs)
    _judge_matmul(report, got, x, fmt, gs, what)


@cache
def _reference_cost(M: int, N: int, K: int, gs: int) -> tuple[int, int]:
    """The reference's (largest tensor, multiply-adds) for this shape, counted once per process:
    its loop depends on the shapes only, not on the values (2-6 ms a verdict otherwise)."""
    x = torch.zeros(M, K)
    fmt = (
        torch.zeros(N, K // 2, dtype=torch.uint8),
        torch.ones(N, K // gs),
        torch.zeros(N, K // gs, dtype=torch.uint8),
    )
    _, largest, madds = counted_call(w4a16_matmul, (x, *fmt, gs), {})
    return largest, madds


def _test_cost(report: CheckReport, session: SubmissionLink, rng: Rng) -> str:
    """w4a16_matmul counted: multiply-adds and largest tensor against the reference's, same counter."""
    M, N, K, gs = COST
    x = grid_activations(rng, M, K)
    fmt = random_format(rng, N, K, gs)
    what = f"w4a16_matmul(x {(M, K)}, packed {(N, K // 2)}, ..., group_size={gs})"
    with submission_context(what):
        got, largest, madds = session.call_counted(MATMUL, x, *fmt, gs)
    _expect_footprint(report, largest, what, M, N, K, gs)
    _judge_matmul(report, got, x, fmt, gs, what)
    ref_largest, ref_madds = _reference_cost(M, N, K, gs)
    ratio = f" ({madds / ref_madds:.2f}x)" if ref_madds else ""
    return (
        f"Measured on M={M}, N={N}, K={K}, group_size={gs}: your w4a16_matmul did {madds:,} multiply-adds "
        f"in its matrix products{ratio}, the reference {ref_madds:,} "
        f"(M x N x K = {matmul_multiply_adds(M, N, K):,}); its "
        f"largest floating-point tensor held {largest:,} numbers, the reference's {ref_largest:,} (the whole "
        f"dequantized weight would be N x K = {N * K:,})."
    )


# --- the battery ----------------------------------------------------------------------------------


def run(session: SubmissionLink, seed: int | None = None) -> CheckReport:
    """The battery; `seed` makes a run reproducible (tests), None draws fresh inputs (grading)."""
    report = CheckReport()
    rng = Rng(seed)
    py = rng.py
    check = partial(run_test, report)

    gs = py.choice([8, 16])
    N, G = py.randint(5, 9), py.randint(3, 6)
    w, constant = probe_weight(rng, N, G * gs, gs)
    check(
        f"quantize_int4: N={N}, K={G * gs}, group_size={gs}, groups of different sizes along K, "
        "a constant group, groups all positive and all negative (the clamps), exact halves (rounding)",
        partial(_test_quantize, report, session, w, gs, constant),
    )
    w1 = rng.randn(3, 2 * gs) * 2.0
    check(
        f"quantize_int4 with group_size = K = {2 * gs}: one group per row",
        partial(_test_quantize, report, session, w1, 2 * gs, torch.zeros(3, 1, dtype=torch.bool)),
    )
    check(
        "quantize_int4(w (3, 20), group_size=8) raises ValueError: K is not a multiple of group_size",
        partial(_test_value_error, report, session, rng, (3, 20), 8, NO_VALUE_ERROR_K),
    )
    odd = py.choice([3, 5])
    check(
        f"quantize_int4(w (3, {4 * odd}), group_size={odd}) raises ValueError: an odd group_size",
        partial(_test_value_error, report, session, rng, (3, 4 * odd), odd, NO_VALUE_ERROR_ODD),
    )
    Nd, Gd, gsd = py.randint(4, 8), py.randint(3, 5), py.choice([4, 8])
    check(
        f"dequantize_int4 of random bytes (every nibble, zeros above the codes): N={Nd}, K={Gd * gsd}, "
        f"group_size={gsd}",
        partial(_test_dequantize, report, session, random_format(rng, Nd, Gd * gsd, gsd), gsd),
    )
    M, Nm, gsm = py.randint(2, 5), py.choice([24, 32]), py.choice([8, 16])
    Km = gsm * py.randint(4, 8)
    check(
        "w4a16_matmul matches x @ dequantize_int4(...).T, its largest tensor measured: "
        f"M={M}, N={Nm}, K={Km}, group_size={gsm}",
        partial(_test_matmul, report, session, rng, M, Nm, Km, gsm, False),
    )
    check(
        f"w4a16_matmul for one row of x (a decode step): M=1, N={Nm}, K={2 * Km}, group_size={gsm}",
        partial(_test_matmul, report, session, rng, 1, Nm, 2 * Km, gsm, False),
    )
    Mb, Nb, Kb, gsb = BIG
    check(
        "w4a16_matmul never holds the whole dequantized weight: the kernel measures the process's peak "
        f"memory, M={Mb}, N={Nb}, K={Kb}, group_size={gsb}",
        partial(_test_matmul, report, session, rng, Mb, Nb, Kb, gsb, True),
    )
    figure_test(
        report,
        "w4a16_matmul's cost: multiply-adds and largest tensor counted against the reference's "
        f"(M={COST[0]}, N={COST[1]}, K={COST[2]}, group_size={COST[3]})",
        partial(_test_cost, report, session, rng),
    )
    return report

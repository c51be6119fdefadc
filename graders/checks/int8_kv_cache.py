"""int8-kv-cache: per-token symmetric int8 quantization of keys and values, and attention over it.

Every tensor is fresh per run. The probes live inside ordinary calls: the tensor given to
quantize_kv has rows of very different magnitudes (so a per-tensor, per-head or per-channel
scale differs from the per-token one), a row of zeros, and rows whose values are exact halves
of their scale (x / scale = n + 0.5 exactly, so the rounding rule shows), the largest of them
negative in some rows (so -127 appears). Keys and values differ in magnitude, so swapped
scales change the answer, and dequantize_kv is called once with T == hd, where a scale
broadcast along the wrong axis runs without an error and gives wrong numbers.

A wrong q or scale is compared with the usual wrong quantizers so the verdict names the
mistake; the last two tests report the measured attention error against fp32 and the bytes the
submission's own int8 cache takes per position, then one attention call's multiply-adds and
largest tensor on a long cache against the reference's (int8_kv_cache_cost.py).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import torch

from graders.checks import cost, int8_kv_cache_cost
from graders.checks.report import CheckReport, Mismatch, as_tensor, close, explain_difference, run_test
from graders.checks.serving_common import Rng, call_entry, figure_test
from graders.reference.int8_cache import QMAX, attention, dequantize_kv, int8_attention, quantize_kv
from graders.sandbox.protocol import SubmissionLink

SLUG = "int8-kv-cache"
ENTRY_POINT = "quantize_kv"

PER_TENSOR = "one scale for the whole tensor, not one per token"
PER_HEAD = "one scale per head (the maximum over every position), not one per token"
PER_CHANNEL = "one scale per channel (the maximum over positions), not one per token"
DIVISOR = "the scale is the absolute maximum divided by 128 or 255, not by 127 (the range is -127..127)"
ZERO_ROW = "a row of zeros must get scale 1.0 (0 / 0 gives NaN, a tiny epsilon gives a wrong scale)"
HALF_UP = "halves are rounded up (floor(x + 0.5)), not to even as torch.round does"
HALF_AWAY = "halves are rounded away from zero, not to even as torch.round does"
TRUNCATES = "values are truncated toward zero (a cast without torch.round)"
NOT_INT8 = "q is not stored as int8, so the cache saves nothing"
WRONG_AXIS = "dequantisation broadcasts the scale along the wrong axis (one scale per channel, not per token)"
SCALES_SWAPPED = "the key and value scales are swapped"
IGNORES_SCALES = "attention runs on the raw int8 values, without their scales"
KEYS_ONLY = "only the keys are dequantised: the values are used as raw int8 numbers"
SCALE_BY_HD = "scores are divided by hd, not sqrt(hd)"
NO_SCALE = "scores are not divided by sqrt(hd)"
OVERFLOW = (
    "NaN or inf for scores in the hundreds: exp of a raw score overflows float32 above about 88; subtract "
    "the row's maximum score before exp (softmax does not change, the overflow goes)"
)
KNOWN_MISTAKES = (
    OVERFLOW,
    PER_TENSOR,
    PER_HEAD,
    PER_CHANNEL,
    DIVISOR,
    ZERO_ROW,
    HALF_UP,
    HALF_AWAY,
    TRUNCATES,
    NOT_INT8,
    WRONG_AXIS,
    SCALES_SWAPPED,
    IGNORES_SCALES,
    KEYS_ONLY,
    SCALE_BY_HD,
    NO_SCALE,
)


# --- inputs ----------------------------------------------------------------------------------------


def cache_tensor(
    rng: Rng, B: int, H: int, T: int, hd: int, magnitude: float = 1.0, probes: bool = True
) -> torch.Tensor:
    """(B, H, T, hd) with per-token and per-channel magnitudes that differ, plus the probe rows."""
    per_token = torch.exp(rng.randn(B, H, T, 1))  # rows from ~0.1 to ~10 times each other
    per_channel = 0.5 + rng.rand(1, 1, 1, hd) * 2
    x = rng.randn(B, H, T, hd) * per_token * per_channel * magnitude
    if T < 3 or not probes:
        return x
    b, h = rng.py.randrange(B), rng.py.randrange(H)
    rows = rng.py.sample(range(T), 3)
    x[b, h, rows[0]] = 0.0  # a row of zeros
    for t, sign in zip(rows[1:], (1.0, -1.0), strict=True):  # exact halves of a power-of-two scale
        step = 2.0 ** rng.py.randint(-6, 0)  # the scale: max|x| / 127 = step exactly
        halves = torch.tensor([rng.py.randrange(-126, 126) + 0.5 for _ in range(hd)])
        halves[rng.py.randrange(hd)] = sign * QMAX  # the row's extreme, +127 or -127
        x[b, rng.py.randrange(H), t] = halves * step
    return x


# --- wrong quantizers ------------------------------------------------------------------------------


def _quantize_with(x: torch.Tensor, amax: torch.Tensor, divisor: float = QMAX, rounding: str = "even") -> Any:
    scale = torch.where(amax == 0, torch.ones_like(amax), amax / divisor)
    ratio = x / scale
    if rounding == "up":
        ratio = torch.floor(ratio + 0.5)
    elif rounding == "away":
        ratio = torch.sign(ratio) * torch.floor(ratio.abs() + 0.5)
    elif rounding == "trunc":
        ratio = torch.trunc(ratio)
    else:
        ratio = torch.round(ratio)
    return ratio.clamp(-divisor, divisor).clamp(-128, 127).to(torch.int8), scale


def scale_variants(x: torch.Tensor) -> list[tuple[str, torch.Tensor]]:
    """(mistake, scale broadcast to (B, H, T, 1)) for the wrong per-what and divide-by choices."""
    amax = x.abs().amax(dim=-1, keepdim=True)
    B, H, T, _ = x.shape
    guarded = torch.where(amax == 0, torch.ones_like(amax), amax)
    return [
        (PER_TENSOR, (x.abs().max() / QMAX).expand(B, H, T, 1)),
        (PER_HEAD, (x.abs().amax(dim=(-2, -1), keepdim=True) / QMAX).expand(B, H, T, 1)),
        (DIVISOR, torch.where(amax == 0, torch.ones_like(amax), guarded / 128)),
        (DIVISOR, torch.where(amax == 0, torch.ones_like(amax), guarded / 255)),
        (ZERO_ROW, amax / QMAX),
        (ZERO_ROW, amax.clamp(min=1e-8) / QMAX),
        (ZERO_ROW, (amax + 1e-8) / QMAX),
    ]


def rounding_variants(x: torch.Tensor) -> list[tuple[str, torch.Tensor]]:
    amax = x.abs().amax(dim=-1, keepdim=True)
    return [
        (name, _quantize_with(x, amax, rounding=r)[0])
        for name, r in ((HALF_UP, "up"), (HALF_AWAY, "away"), (TRUNCATES, "trunc"))
    ]


def _named(report: CheckReport, variants: list[tuple[str, torch.Tensor]], got: torch.Tensor) -> str:
    for name, wrong in variants:
        same = torch.equal(wrong, got) if not got.is_floating_point() else close(got, wrong)
        if wrong.shape == got.shape and same:
            report.diagnose(name)
            return f": it looks like {name}"
    return ""


def ambiguous(x: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """Where x / scale is within 1e-3 of a half, but not exactly on it: another float32 formula
    (x * 127 / amax, say) may round those the other way. Exact halves are never ambiguous."""
    frac = (x.double() / scale.double()).abs() % 1
    return ((frac - 0.5).abs() < 1e-3) & (frac != 0.5)


# --- the tests -------------------------------------------------------------------------------------


def _quantized(report: CheckReport, value: Any, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Check the submission's (q, scale) for x against the reference; return them."""
    if not isinstance(value, tuple | list) or len(value) != 2:
        raise Mismatch(f"quantize_kv should return a pair (q, scale), got {type(value).__name__}")
    q, scale = as_tensor(value[0], "q"), as_tensor(value[1], "scale")
    want_q, want_scale = quantize_kv(x)
    B, H, T, hd = x.shape
    if q.dtype != torch.int8:
        report.diagnose(NOT_INT8)
        raise Mismatch(f"q has dtype {q.dtype}: {NOT_INT8} (use .to(torch.int8) after rounding and clamping)")
    if q.shape != x.shape:
        raise Mismatch(f"q has shape {tuple(q.shape)}, expected x's shape {tuple(x.shape)}")
    if scale.shape == (B, H, 1, hd):
        report.diagnose(PER_CHANNEL)
        raise Mismatch(f"scale has shape {tuple(scale.shape)}: {PER_CHANNEL}; reduce over hd, dim=-1")
    if scale.shape == (B, H, T):
        raise Mismatch(f"scale has shape {tuple(scale.shape)}: keep the reduced dimension, (B, H, T, 1)")
    if scale.dtype != torch.float32:
        raise Mismatch(f"scale has dtype {scale.dtype}, expected torch.float32")
    if scale.shape != want_scale.shape:
        try:  # a per-tensor () or per-head (B, H, 1, 1) scale: compare it as if broadcast
            scale = scale.expand(B, H, T, 1)
        except RuntimeError:
            pass
    if not close(scale, want_scale):
        hint = _named(report, scale_variants(x), scale) if scale.shape == want_scale.shape else ""
        raise Mismatch(explain_difference(scale, want_scale, "scale") + hint)
    off = (q.to(torch.int16) - want_q.to(torch.int16)).abs()
    if bool((off > ambiguous(x, want_scale).to(torch.int16)).any()):
        wrong = (off > ambiguous(x, want_scale).to(torch.int16)).nonzero()[0].tolist()
        ratio = float(x[tuple(wrong)] / want_scale[tuple(wrong[:3])])
        hint = _named(report, rounding_variants(x), q)
        raise Mismatch(
            f"q differs from round(x / scale) clamped to [-127, 127] at {int((off > 0).sum())} places, "
            f"first at {tuple(wrong)}: x / scale = {ratio:.4g}, "
            f"got {int(q[tuple(wrong)])}, expected {int(want_q[tuple(wrong)])}{hint}"
        )
    return q, scale


def _test_quantize(report: CheckReport, session: SubmissionLink, x: torch.Tensor) -> None:
    _quantized(report, call_entry(session, "quantize_kv", x), x)


def _test_dequantize(report: CheckReport, session: SubmissionLink, x: torch.Tensor) -> None:
    q, scale = quantize_kv(x)
    got = as_tensor(call_entry(session, "dequantize_kv", q, scale), "dequantize_kv(q, scale)")
    want = dequantize_kv(q, scale)
    if got.dtype != torch.float32:
        raise Mismatch(f"dequantize_kv returned {got.dtype}, expected torch.float32 (q.float() * scale)")
    if not close(got, want):
        wrong_axis = q.float() * scale.transpose(-2, -1)
        hint = ""
        if close(got, wrong_axis):
            report.diagnose(WRONG_AXIS)
            hint = f": {WRONG_AXIS}"
        raise Mismatch(explain_difference(got, want, "dequantize_kv(q, scale)") + hint)


def attention_variants(
    qry: torch.Tensor, k_q: torch.Tensor, k_s: torch.Tensor, v_q: torch.Tensor, v_s: torch.Tensor
) -> dict[str, torch.Tensor]:
    k, v = dequantize_kv(k_q, k_s), dequantize_kv(v_q, v_s)
    hd = qry.shape[-1]
    return {
        SCALES_SWAPPED: attention(qry, dequantize_kv(k_q, v_s), dequantize_kv(v_q, k_s)),
        IGNORES_SCALES: attention(qry, k_q.float(), v_q.float()),
        KEYS_ONLY: attention(qry, k, v_q.float()),
        SCALE_BY_HD: torch.softmax(qry @ k.transpose(-2, -1) / hd, -1) @ v,
        NO_SCALE: torch.softmax(qry @ k.transpose(-2, -1), -1) @ v,
    }


def outlier_cache(
    rng: Rng, B: int, H: int, T: int, hd: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """A query and a quantized key cache with one outlier channel, as real keys have (LLM.int8(),
    arXiv:2208.07339; KIVI, arXiv:2402.02750): scores of about 300, a few apart.

    Every key's outlier channel is +127 (its row maximum) with a power-of-two scale, the query is on
    a 1/64 grid and hd is 4, so every float32 score is exact: only the handling of exp is tested,
    not the order of a sum (which at this size could move the answer past the tolerance).
    """
    c = rng.py.randrange(hd)
    k_q = torch.randint(-60, 61, (B, H, T, hd), generator=rng.torch).to(torch.int8)
    k_q[..., c] = QMAX
    k_s = torch.full((B, H, T, 1), 0.25)  # dequantized keys: multiples of 1/4, the outlier 31.75
    qry = torch.randint(-16, 17, (B, H, 1, hd), generator=rng.torch).float() / 64  # small, on the grid
    qry[..., c] = torch.randint(17 * 64, 22 * 64, (B, H, 1), generator=rng.torch).float() / 64
    return qry, k_q, k_s


def _test_attention(
    report: CheckReport,
    session: SubmissionLink,
    rng: Rng,
    B: int,
    H: int,
    T: int,
    hd: int,
    outliers: bool = False,
) -> None:
    qry = rng.randn(B, H, 1, hd)
    k_q, k_s = quantize_kv(cache_tensor(rng, B, H, T, hd, magnitude=3.0))  # keys larger than values
    if outliers:
        qry, k_q, k_s = outlier_cache(rng, B, H, T, hd)
    v_q, v_s = quantize_kv(cache_tensor(rng, B, H, T, hd, magnitude=0.2))
    got = as_tensor(call_entry(session, "int8_attention", qry, k_q, k_s, v_q, v_s), "int8_attention(...)")
    want = int8_attention(qry, k_q, k_s, v_q, v_s)
    if outliers and not bool(torch.isfinite(got).all()):
        report.diagnose(OVERFLOW)
        top = float((qry @ dequantize_kv(k_q, k_s).transpose(-2, -1)).max() / hd**0.5)
        raise Mismatch(f"int8_attention with scores up to {top:.0f} returned NaN or inf: {OVERFLOW}")
    if not close(got, want):
        message = explain_difference(got, want, f"int8_attention over T={T} positions")
        for name, wrong in attention_variants(qry, k_q, k_s, v_q, v_s).items():
            if close(got, wrong):
                report.diagnose(name)
                message += f": it looks like {name}"
                break
        raise Mismatch(message)


def _test_figures(report: CheckReport, session: SubmissionLink, rng: Rng) -> str:
    """The submission's own cache: attention error against fp32 and bytes per position."""
    B, H, T, hd = 1, 2, 128, 64
    k = cache_tensor(rng, B, H, T, hd, probes=False)  # like real keys and values: no planted rows
    v = cache_tensor(rng, B, H, T, hd, magnitude=0.5, probes=False)
    qry = rng.randn(B, H, 1, hd)
    k_q, k_s = _quantized(report, call_entry(session, "quantize_kv", k), k)
    v_q, v_s = _quantized(report, call_entry(session, "quantize_kv", v), v)
    got = as_tensor(call_entry(session, "int8_attention", qry, k_q, k_s, v_q, v_s), "int8_attention(...)")
    want = int8_attention(qry, k_q, k_s, v_q, v_s)
    if not close(got, want):
        raise Mismatch(explain_difference(got, want, "int8_attention over your own quantized cache"))
    fp32 = attention(qry, k, v)
    err = (got.double() - fp32.double()).abs()
    rel = float(err.norm() / fp32.double().norm())
    per_position = k_q.element_size() * hd + k_s.element_size() * k_s.shape[-1]
    fp16 = 2 * hd
    return (
        f"Measured on {T} cached positions, hd={hd}: your int8 attention is within {err.max().item():.2g} "
        f"of fp32 attention (mean {err.mean().item():.2g}, {rel:.2%} relative). Your cache costs "
        f"{per_position} bytes per position per head for keys (and the same for values), against {fp16} "
        f"in fp16 and {4 * hd} in fp32: {1 - per_position / fp16:.1%} of the fp16 cache saved, "
        f"{per_position * T * H * 2:,} bytes instead of {fp16 * T * H * 2:,} for this layer."
    )


def run(session: SubmissionLink, seed: int | None = None) -> CheckReport:
    """The battery; `seed` makes a run reproducible (tests), None draws fresh inputs (grading)."""
    report = CheckReport()
    rng = Rng(seed)
    py = rng.py
    B, H = py.choice([2, 3]), py.choice([2, 3])
    hd = py.choice([6, 8, 12])
    T = py.choice([t for t in range(5, 11) if t != hd])

    def check(name: str, body: Callable[[], None]) -> None:
        run_test(report, name, body)

    x = cache_tensor(rng, B, H, T, hd)
    check(
        f"quantize_kv: one scale per token and head, values rounded half to even, int8 "
        f"(B={B} H={H} T={T} hd={hd})",
        partial(_test_quantize, report, session, x),
    )
    x1 = cache_tensor(rng, 1, 1, py.randint(3, 6), hd + 1)
    check("quantize_kv on a single head, odd head size", partial(_test_quantize, report, session, x1))
    square = cache_tensor(rng, B, H, hd, hd)  # T == hd: the wrong axis would broadcast silently
    check(
        f"dequantize_kv scales each token's row by its own scale (T == hd == {hd})",
        partial(_test_dequantize, report, session, square),
    )
    T2 = py.randint(9, 14)
    check(
        f"int8_attention matches attention over the dequantized cache (B={B} H={H}, T={T2} positions, "
        "keys and values of different magnitudes)",
        partial(_test_attention, report, session, rng, B, H, T2, hd),
    )
    check(
        f"int8_attention with an outlier key channel: scores in the hundreds, beyond exp's float32 range "
        f"(B={B} H={H}, T={T2}, hd=4)",
        partial(_test_attention, report, session, rng, B, H, T2, 4, outliers=True),
    )
    check(
        "int8_attention over a cache of one position (B=1)",
        partial(_test_attention, report, session, rng, 1, H, 1, hd),
    )
    figure_test(
        report,
        "the int8 cache against fp32: attention error and bytes per position",
        partial(_test_figures, report, session, rng),
    )
    measure = cost.measurer(session)
    figure_test(report, int8_kv_cache_cost.NAME, lambda: int8_kv_cache_cost.figure(rng, measure))
    return report

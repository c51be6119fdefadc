"""mla-decode's decode calls on a long cache, measured from outside, and the cost report.

On a long cache (S = 2048, B = 2, H = 16: per-head keys or values of 32 MiB and more) each decode
call is measured by the recorder and by the kernel (mla_decode_rule.py) and compared with the
reference in float32. The weights travel once, into a dict the grader makes in the submission's
process (`new_dict`), and every call names that dict: they are the model's, the same on every
call as in an engine, while each call's cache is a new one the grader built. The last test counts
a decode call's multiply-adds and largest tensor against the reference's (the cost report).
"""

from __future__ import annotations

from typing import Any

import torch

from graders.checks.attention_common import decode_tensor, submission_context
from graders.checks.mla_decode_calls import cache_entry, pair, weights_for
from graders.checks.mla_decode_rule import (
    ENTRY_POINT,
    Measured,
    expect_absorbed,
    measured_call,
    resident_budget,
)
from graders.checks.report import CheckReport, Mismatch, explain_difference
from graders.checks.serving_common import Rng
from graders.reference.mla import MLADims, mla_attention
from graders.sandbox.protocol import SubmissionLink
from graders.sandbox.work_counter import counted_call

BASES = (500.0, 2500.0, 40000.0)  # never 10000: a non-default base tells BASE_IGNORED apart
# B, S, d, H, d_nope, d_rope, d_c, d_v of the long cache: all different. Per-head keys and values
# are B x H x S x d_nope and d_v numbers (40 and 32 MiB) while a decode call's own work is
# B x H x S x (2 d_c + d_rope) multiply-adds and a softmax over B x H x S scores, so the heads are few
# and wide (d_nope = 160 and d_v = 128, rather than 64 heads of 40 and 32), and d, d_rope and d_c,
# which are not the point here, small: a call does about a ninth of the multiply-adds that H = 64,
# d_rope = 16 and d_c = 48 took and a quarter of the scores, its cache (sent, and returned) is
# 0.5 MB and the weights (mostly w_q, w_uk and w_uv) a few hundred thousand numbers.
LONG = (2, 2048, 24, 16, 160, 12, 20, 128)
LONG_STEPS = 3
COST = (1, 512, 48, 8, 24, 8, 16, 20)  # the cost report's decode call, same order


def long_dims(sizes: tuple[int, ...]) -> tuple[int, int, MLADims]:
    B, S, d, H, dn, dr, dc, dv = sizes
    return B, S, MLADims(d, H, dn, dr, dc, dv)


def as_checked(got: Any, want: torch.Tensor, what: str, widen: float) -> torch.Tensor:
    """`got` decoded when it matches `want` within the tolerance widened `widen` times."""
    tensor = decode_tensor(got, what)
    if tensor.shape == want.shape and torch.allclose(
        tensor.double(), want, rtol=1e-4 * widen, atol=1e-5 * widen
    ):
        return tensor
    raise Mismatch(explain_difference(tensor, want, what))


def long_cache_test(report: CheckReport, session: SubmissionLink, rng: Rng) -> None:
    """LONG_STEPS decode calls on a cache of about 2,040 positions the grader made, every one
    measured by the recorder and by the kernel, and compared with the reference."""
    B, S, dims = long_dims(LONG)
    s_past = S - LONG_STEPS + rng.py.randrange(-2, 1)
    weights = weights_for(rng, dims)
    base = rng.py.choice(BASES)
    past = {"c": rng.randn(B, s_past, dims.d_c), "k_rope": rng.randn(B, s_past, dims.d_rope)}
    weight_numbers = sum(w.numel() for w in weights.values())
    model = session.new_dict(weights)  # sent with the first call, inside its measurement
    for step in range(LONG_STEPS):
        s = s_past + step
        x = rng.randn(B, 1, dims.d)
        what = f"decode call {step + 1} on {s} cached positions (B={B}, H={dims.n_heads})"
        with submission_context(what):
            got, measured = measured_call(session, [x, model, dims.n_heads, past], {"base": base})
        # The weights count as inputs on every call: a call may copy them as it likes.
        io = x.numel() + weight_numbers + 2 * B * (s + 1) * (dims.d_c + dims.d_rope) + B * dims.d
        expect_absorbed(report, dims, B, s + 1, measured, resident_budget(dims, B, s + 1, io), what)
        y, got_cache = pair(got, what)
        # The reference in float32 here: RoPE at position ~2,040 already widens the tolerance 32 times
        # (float32 formulations of theta differ by up to s x 6e-8 rad), far above float32's rounding.
        want, cache = mla_attention(x, weights, dims.n_heads, past, base)
        widen = max(1.0, s / 64)
        as_checked(y, want.double(), f"{what}, y", widen)
        for key in ("c", "k_rope"):
            got_entry = decode_tensor(cache_entry(got_cache, key, what), f"{what}'s cache[{key!r}]")
            label = f"{what}, cache[{key!r}]"
            if got_entry.shape != cache[key].shape or not torch.equal(got_entry[:, :s], past[key]):
                raise Mismatch(explain_difference(got_entry, cache[key], label))  # the cached rows changed
            as_checked(got_entry[:, s:], cache[key][:, s:].double(), f"{label} at the new position", widen)
        past = cache


def cost_test(report: CheckReport, session: SubmissionLink, rng: Rng) -> str:
    """One decode call counted: multiply-adds and largest tensor against the reference's."""
    B, S, dims = long_dims(COST)
    weights = weights_for(rng, dims)
    past = {"c": rng.randn(B, S - 1, dims.d_c), "k_rope": rng.randn(B, S - 1, dims.d_rope)}
    x = rng.randn(B, 1, dims.d)
    what = f"a decode call on {S - 1} cached positions (B={B}, H={dims.n_heads})"
    with submission_context(what):
        got, largest, madds = session.call_counted(ENTRY_POINT, x, weights, dims.n_heads, past)
    expect_absorbed(report, dims, B, S, Measured(largest, None), None, what)
    y, _ = pair(got, what)
    (want, _), ref_largest, ref_madds = counted_call(mla_attention, (x, weights, dims.n_heads, past), {})
    as_checked(y, want.double(), f"{what}, y", 1.0)
    H = dims.n_heads
    rebuild = B * S * dims.d_c * H * (dims.d_nope + dims.d_v)
    ratio = f" ({madds / ref_madds:.2f}x)" if ref_madds else ""
    return (
        f"Measured on B={B}, S={S}, H={H}, d_nope={dims.d_nope}, d_rope={dims.d_rope}, d_c={dims.d_c}, "
        f"d_v={dims.d_v}: your decode call did {madds:,} multiply-adds in its matrix products{ratio}, the "
        f"absorbed reference {ref_madds:,} (rebuilding every head's keys and values alone would be "
        f"{rebuild:,}); its largest floating-point tensor held {largest:,} numbers, the reference's "
        f"{ref_largest:,} (per-head keys for every position would be {B * H * S * dims.d_nope:,})."
    )

"""mla-decode: `mla_attention(x, weights, n_heads, cache=None, base=10000.0) -> (y, cache)`.

Every run draws fresh sizes (B, T, d, H, d_nope, d_rope, d_c and d_v all different from each
other, so a swap of two changes the answer) and weights. The layer runs over schedules of calls
(a whole prompt with the cache left out, chunks from cache={} with a base by keyword, a prompt
from cache=None then single tokens with a base by position) and every call's y and returned cache
("c" and the rotated "k_rope", nothing else is read back) are compared with one full pass over all
the tokens (graders/reference/mla.py, float64). Every call gets a cache the grader built itself
with only "c" and "k_rope", so a solution that relies on anything else in it fails, and the probe
that changes a cached position looks like any other call. RoPE positions stay below 64 except in
the long-cache test, whose tolerance widens with the position (shared/CONTRACT.md).

The absorption rule is measured on every decode call (T = 1): graders/sandbox/footprint.py's
recorder reports the largest floating-point tensor the call built, which must hold fewer than
B * H * S * min(d_nope, d_v) numbers where S makes that well above the latent cache, the scores,
the query and every weight (`rule_applies`). The recorder runs in the submission's process, so on
a long cache (S = 2048, B = 2, H = 64: per-head keys or values of 32 MiB and more) the grader also reads the
kernel's peak of the process's resident memory around each decode call (session.peak_watch(),
graders/sandbox/outside.py), less the code pages the call first touched, and a call above a
budget that fits the inputs and outputs twice over and a few score-sized tensors fails whatever
the recorder said. The last test counts a decode call's multiply-adds and largest tensor against
the reference's (the cost report).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import torch

from graders.checks.attention_common import (
    Comparison,
    Evidence,
    Variant,
    compare,
    decode_tensor,
    describe,
    submission_context,
)
from graders.checks.mla_decode_variants import (
    CACHE_MISTAKES,
    CACHE_NEW_ONLY,
    CACHE_UNROTATED,
    GLOBAL_STATE,
    NUMERICAL_MISTAKES,
    PER_HEAD_KEYS,
    PER_HEAD_MEMORY,
    PER_HEAD_VALUES,
    layer_variants,
    mla_layer,
)
from graders.checks.report import CheckReport, Mismatch, close, explain_difference, run_test
from graders.checks.rope_common import DEFAULT_BASE
from graders.checks.serving_common import Rng, figure_test
from graders.reference.mla import MLADims, mla_attention, random_weights
from graders.sandbox import outside
from graders.sandbox.protocol import SubmissionLink
from graders.sandbox.work_counter import counted_call

SLUG = "mla-decode"
ENTRY_POINT = "mla_attention"
KNOWN_MISTAKES = (
    *NUMERICAL_MISTAKES,
    *CACHE_MISTAKES,
    GLOBAL_STATE,
    PER_HEAD_KEYS,
    PER_HEAD_VALUES,
    PER_HEAD_MEMORY,
)
__all__ = ["ENTRY_POINT", "KNOWN_MISTAKES", "SLUG", "run"]

BASES = (500.0, 2500.0, 40000.0)  # never 10000: a non-default base tells BASE_IGNORED apart
RULE_MARGIN = 4  # the rule decides where per-head tensors are this many times every allowed tensor
LONG = (2, 2048, 72, 64, 40, 16, 48, 32)  # B, S, d, H, d_nope, d_rope, d_c, d_v of the long cache
LONG_STEPS = 3
COST = (1, 512, 48, 8, 24, 8, 16, 20)  # the cost report's decode call, same order
MIB = 1 << 20


# --- sizes and inputs -----------------------------------------------------------------------------


def random_dims(rng: Rng, B: int) -> MLADims:
    """Sizes that differ from each other and from B: even d_rope (RoPE pairs) and d_c, odd d_v."""
    py = rng.py
    H = py.choice([h for h in (2, 3, 4) if h != B])
    return MLADims(
        d=py.choice([24, 30, 36]),
        n_heads=H,
        d_nope=py.choice([8, 10, 12]),
        d_rope=py.choice([r for r in (4, 6) if r != H]),
        d_c=py.choice([14, 16, 18, 20]),
        d_v=py.choice([5, 7, 9, 11]),
    )


def weights_for(rng: Rng, dims: MLADims) -> dict[str, torch.Tensor]:
    return random_weights(rng.torch, dims.d, dims.n_heads, dims.d_nope, dims.d_rope, dims.d_c, dims.d_v)


def as_double(weights: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {name: w.double() for name, w in weights.items()}


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
class _Sequence:
    """Tokens x (B, S, d) and one full pass over all of them (float64), the target of every call."""

    rng: Rng
    B: int
    S: int
    dims: MLADims
    base: float
    weights: dict[str, torch.Tensor] = field(init=False)
    x: torch.Tensor = field(init=False)

    def __post_init__(self) -> None:
        self.weights = weights_for(self.rng, self.dims)
        self.x = self.rng.randn(self.B, self.S, self.dims.d)
        self.y, cache = mla_attention(
            self.x.double(), as_double(self.weights), self.dims.n_heads, base=self.base
        )
        self.c, self.k_rope = cache["c"], cache["k_rope"]  # float64

    def past(self, s: int) -> dict[str, torch.Tensor]:
        return {"c": self.c[:, :s], "k_rope": self.k_rope[:, :s]}  # float64

    def variants(self, s: int, n: int, past: dict[str, torch.Tensor] | None = None) -> dict[str, Any]:
        x = self.x[:, s : s + n].double()
        past = self.past(s) if past is None else past
        return layer_variants(x, as_double(self.weights), self.dims.n_heads, past, self.base)


# --- one call -------------------------------------------------------------------------------------


def _pair(got: Any, what: str) -> tuple[Any, Any]:
    if not isinstance(got, tuple | list) or len(got) != 2:
        raise Mismatch(f"{what} should return a pair (y, cache), got {describe(got)}")
    return got[0], got[1]


def cache_entry(cache: Any, key: str, what: str) -> Any:
    if not isinstance(cache, dict):
        raise Mismatch(f"{what}'s cache should be a dict with 'c' and 'k_rope', got {describe(cache)}")
    if key not in cache:
        have = ", ".join(repr(k) for k in cache) or "nothing"
        raise Mismatch(
            f"{what}'s cache has no {key!r} entry (it holds {have}): the cache is "
            "{'c': the latents (B, S, d_c), 'k_rope': the rotated RoPE keys (B, S, d_rope)}"
        )
    return cache[key]


def _cache_variants(
    outs: dict[str, Any], y: torch.Tensor, key: str, want: torch.Tensor, n: int
) -> list[Variant]:
    """Wrong contents of cache[key], from the mistakes whose y is the y the submission returned (a
    cache left unrotated and keys never rotated store the same, but only one gives a right y)."""
    wrong: list[Variant] = [((m,), getattr(out, key)) for m, out in outs.items() if close(y, out.y)]
    if 0 < n < want.shape[1]:
        wrong.append(((CACHE_NEW_ONLY,), want[:, -n:]))
    return wrong


@dataclass
class _Call:
    """How a schedule's calls are made: the first call's cache (left out, None or {}) and the base
    (left out, by keyword or by position)."""

    first_cache: str = "omit"  # "omit" | "none" | "empty"
    base_as: str = "keyword"  # "omit" | "keyword" | "positional"


def call_args(
    x: torch.Tensor,
    weights: dict[str, torch.Tensor],
    H: int,
    cache: Any,
    base: float,
    how: _Call,
    first: bool,
) -> tuple[list[Any], dict[str, Any]]:
    args: list[Any] = [x, weights, H]
    kwargs: dict[str, Any] = {}
    leave_out_cache = first and how.first_cache == "omit"
    if how.base_as == "positional":
        return [*args, cache, base], kwargs
    if not leave_out_cache:
        args.append(cache)
    if how.base_as == "keyword":
        kwargs["base"] = base
    return args, kwargs


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


def _one_call(
    report: CheckReport,
    session: SubmissionLink,
    seq: _Sequence,
    s: int,
    n: int,
    how: _Call,
    cache_ev: Evidence,
    what: str,
) -> Comparison:
    """Call the submission on tokens s..s+n over the true past; compare y, record the cache's
    comparison. A decode call (n = 1) is measured."""
    x = seq.x[:, s : s + n]
    past = {key: value.float() for key, value in seq.past(s).items()}
    cache: Any = past if s > 0 else {"none": None, "empty": {}, "omit": None}[how.first_cache]
    args, kwargs = call_args(x, seq.weights, seq.dims.n_heads, cache, seq.base, how, s == 0)
    with submission_context(f"{what}: x {tuple(x.shape)} with {s} positions cached"):
        if n == 1:
            got, measured = measured_call(session, args, kwargs)
        else:
            got, measured = session.call(ENTRY_POINT, *args, **kwargs), None
    y, got_cache = _pair(got, what)
    if measured is not None:
        expect_absorbed(report, seq.dims, seq.B, s + n, measured, None, what)
    outs: dict[str, Any] | None = None

    def variants() -> dict[str, Any]:
        nonlocal outs
        outs = seq.variants(s, n) if outs is None else outs
        return outs

    y_cmp = compare(
        y,
        seq.y[:, s : s + n],
        f"{what}, y",
        lambda: [((m,), out.y) for m, out in variants().items() if m != CACHE_UNROTATED or s == 0],
    )
    for key, full in (("c", seq.c), ("k_rope", seq.k_rope)):
        want = full[:, : s + n]
        got_entry = cache_entry(got_cache, key, what)
        label = f"{what}, cache[{key!r}] (B, S_past + T, {'d_c' if key == 'c' else 'd_rope'})"
        wrong = partial(lambda k, w: _cache_variants(variants(), y_cmp.tensor, k, w, n), key, want)
        cache_ev.add(compare(got_entry, want, label, wrong))
    return y_cmp


def _schedule_test(
    report: CheckReport, session: SubmissionLink, seq: _Sequence, chunks: Sequence[int], how: _Call
) -> None:
    y_ev, cache_ev = Evidence(), Evidence()
    s = 0
    for i, n in enumerate(chunks):
        what = f"call {i + 1} (tokens {s}..{s + n - 1})"
        try:
            y_ev.add(_one_call(report, session, seq, s, n, how, cache_ev, what))
        except Mismatch:
            if not (y_ev.failed or cache_ev.failed):
                raise
            break  # report the first mismatch, not a later crash
        s += n
    y_ev.conclude(report)
    cache_ev.conclude(report)


def _changed_cache_test(report: CheckReport, session: SubmissionLink, seq: _Sequence, prompt: int) -> None:
    """The cache handed in has one changed position; the output must follow it."""
    row = seq.rng.py.randrange(1, prompt - 1)
    changed = {key: value.clone() for key, value in seq.past(prompt).items()}  # float64
    changed["c"][:, row] = seq.rng.randn(seq.B, seq.dims.d_c).double() * 3
    changed["k_rope"][:, row] = seq.rng.randn(seq.B, seq.dims.d_rope).double() * 3
    x = seq.x[:, prompt : prompt + 1]
    H = seq.dims.n_heads
    want = mla_layer(x.double(), as_double(seq.weights), H, changed, seq.base).y
    with submission_context(f"a {prompt}-token prompt"):
        session.call(ENTRY_POINT, seq.x[:, :prompt], seq.weights, H, None, base=seq.base)
    cache = {key: value.float() for key, value in changed.items()}
    with submission_context(f"one token on a {prompt}-token cache"):
        got, measured = measured_call(session, [x, seq.weights, H, cache], {"base": seq.base})
    y, _ = _pair(got, "the call")
    expect_absorbed(report, seq.dims, seq.B, prompt + 1, measured, None, "the call")
    result = compare(y, want, "y over the changed cache")
    if result.ok:
        return
    if close(result.tensor, seq.y[:, prompt : prompt + 1]):
        report.diagnose(GLOBAL_STATE)
        raise Mismatch(
            f"after the grader changed position {row} of cache['c'] and cache['k_rope'], y was unchanged. "
            f"Likely cause: {GLOBAL_STATE}"
        )
    variants = layer_variants(x.double(), as_double(seq.weights), H, changed, seq.base)
    named = next((m for m, out in variants.items() if close(result.tensor, out.y)), None)
    if named:
        report.diagnose(named)
        raise Mismatch(f"{result.message}. Likely cause: {named}")
    raise Mismatch(result.message)


# --- the long cache: absorption measured from outside ---------------------------------------------


def _long_dims(sizes: tuple[int, ...]) -> tuple[int, int, MLADims]:
    B, S, d, H, dn, dr, dc, dv = sizes
    return B, S, MLADims(d, H, dn, dr, dc, dv)


def _long_cache_test(report: CheckReport, session: SubmissionLink, rng: Rng) -> None:
    """LONG_STEPS decode calls on a cache of about 2,040 positions the grader made, every one
    measured by the recorder and by the kernel, and compared with the reference."""
    B, S, dims = _long_dims(LONG)
    s_past = S - LONG_STEPS + rng.py.randrange(-2, 1)
    weights = weights_for(rng, dims)
    base = rng.py.choice(BASES)
    past = {"c": rng.randn(B, s_past, dims.d_c), "k_rope": rng.randn(B, s_past, dims.d_rope)}
    weight_numbers = sum(w.numel() for w in weights.values())
    for step in range(LONG_STEPS):
        s = s_past + step
        x = rng.randn(B, 1, dims.d)
        what = f"decode call {step + 1} on {s} cached positions (B={B}, H={dims.n_heads})"
        with submission_context(what):
            got, measured = measured_call(session, [x, weights, dims.n_heads, past], {"base": base})
        io = x.numel() + weight_numbers + 2 * B * (s + 1) * (dims.d_c + dims.d_rope) + B * dims.d
        expect_absorbed(report, dims, B, s + 1, measured, resident_budget(dims, B, s + 1, io), what)
        y, got_cache = _pair(got, what)
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


def as_checked(got: Any, want: torch.Tensor, what: str, widen: float) -> torch.Tensor:
    """`got` decoded when it matches `want` within the tolerance widened `widen` times."""
    tensor = decode_tensor(got, what)
    if tensor.shape == want.shape and torch.allclose(
        tensor.double(), want, rtol=1e-4 * widen, atol=1e-5 * widen
    ):
        return tensor
    raise Mismatch(explain_difference(tensor, want, what))


# --- the cost report ------------------------------------------------------------------------------


def _cost_test(report: CheckReport, session: SubmissionLink, rng: Rng) -> str:
    """One decode call counted: multiply-adds and largest tensor against the reference's."""
    B, S, dims = _long_dims(COST)
    weights = weights_for(rng, dims)
    past = {"c": rng.randn(B, S - 1, dims.d_c), "k_rope": rng.randn(B, S - 1, dims.d_rope)}
    x = rng.randn(B, 1, dims.d)
    what = f"a decode call on {S - 1} cached positions (B={B}, H={dims.n_heads})"
    with submission_context(what):
        got, largest, madds = session.call_counted(ENTRY_POINT, x, weights, dims.n_heads, past)
    expect_absorbed(report, dims, B, S, Measured(largest, None), None, what)
    y, _ = _pair(got, what)
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


# --- the battery ----------------------------------------------------------------------------------


def run(session: SubmissionLink, seed: int | None = None) -> CheckReport:
    """The battery; `seed` makes a run reproducible (tests), None draws fresh inputs (grading)."""
    report = CheckReport()
    rng = Rng(seed)
    py = rng.py

    def check(name: str, body: Callable[[], None]) -> bool:
        return run_test(report, name, body)

    def sizes(dims: MLADims) -> str:
        return (
            f"d={dims.d} H={dims.n_heads} d_nope={dims.d_nope} d_rope={dims.d_rope} d_c={dims.d_c} "
            f"d_v={dims.d_v}"
        )

    T = py.randrange(5, 9)
    seq = _Sequence(rng, 1, T, random_dims(rng, 1), DEFAULT_BASE)
    check(
        f"a {T}-token prompt, cache and base left out: y, cache['c'] and the rotated cache['k_rope'], "
        f"B=1 {sizes(seq.dims)}",
        partial(_schedule_test, report, session, seq, [T], _Call("omit", "omit")),
    )
    base = py.choice(BASES)
    chunks = [py.randrange(3, 6), py.randrange(2, 4), py.randrange(3, 7)]
    seq = _Sequence(rng, 2, sum(chunks), random_dims(rng, 2), base)
    check(
        f"chunked prefill in chunks of {', '.join(map(str, chunks))} from cache={{}} equals one pass, "
        f"base={base:g} by keyword, B=2 {sizes(seq.dims)}",
        partial(_schedule_test, report, session, seq, chunks, _Call("empty", "keyword")),
    )
    base = py.choice(BASES)
    prompt, steps = py.randrange(4, 8), 12
    seq = _Sequence(rng, 3, prompt + steps, random_dims(rng, 3), base)
    check(
        f"a {prompt}-token prompt (cache=None) then {steps} decode steps of one token, each measured, "
        f"base={base:g} by position, B=3 {sizes(seq.dims)}",
        partial(_schedule_test, report, session, seq, [prompt] + [1] * steps, _Call("none", "positional")),
    )
    seq = _Sequence(rng, 2, 8, random_dims(rng, 2), py.choice(BASES))
    check(
        "reads the past from the cache passed in: a changed cached latent and RoPE key change the output, "
        f"B=2 {sizes(seq.dims)}",
        partial(_changed_cache_test, report, session, seq, 7),
    )
    B, S, dims = _long_dims(LONG)
    check(
        f"absorbed decode on a long cache: {LONG_STEPS} decode calls on about {S - LONG_STEPS:,} cached "
        f"positions, B={B} "
        f"H={dims.n_heads} d_nope={dims.d_nope} d_v={dims.d_v} d_c={dims.d_c}, each call's largest tensor "
        "and, from outside your process, its memory measured",
        partial(_long_cache_test, report, session, rng),
    )
    figure_test(
        report,
        f"a decode call's cost: multiply-adds and largest tensor counted against the reference's "
        f"(B={COST[0]}, S={COST[1]}, H={COST[3]})",
        partial(_cost_test, report, session, rng),
    )
    return report

"""mla-decode's schedules of calls against one full pass, and the probe that changes the cache.

A `_Sequence` is tokens x (B, S, d), weights and one full pass over all the tokens in float64
(graders/reference/mla.py), the target of every call. Every call gets a cache the grader built
itself from that pass, with only "c" and "k_rope", so no call's arguments wait for an earlier
answer: a test queues all its calls (`call_later`, `call_measured_later` for the decode calls,
which the absorption rule measures) and pays one round trip for them, then checks the answers in
order, as if each had been made alone. The named mistakes' outputs (mla_decode_variants.py) are
computed only for a call whose answer is wrong.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import torch

from graders.checks.attention_common import (
    Comparison,
    Evidence,
    Variant,
    compare,
    describe,
    submission_context,
)
from graders.checks.mla_decode_rule import ENTRY_POINT, Measured, expect_absorbed
from graders.checks.mla_decode_variants import (
    CACHE_NEW_ONLY,
    CACHE_UNROTATED,
    GLOBAL_STATE,
    layer_variants,
    mla_layer,
)
from graders.checks.report import CheckReport, Mismatch, close
from graders.checks.serving_common import Rng
from graders.reference.mla import MLADims, mla_attention, random_weights
from graders.sandbox.protocol import Pending, SubmissionLink


def weights_for(rng: Rng, dims: MLADims) -> dict[str, torch.Tensor]:
    return random_weights(rng.torch, dims.d, dims.n_heads, dims.d_nope, dims.d_rope, dims.d_c, dims.d_v)


def as_double(weights: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {name: w.double() for name, w in weights.items()}


@dataclass
class Tokens:
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
        self.weights64 = as_double(self.weights)
        self.y, cache = mla_attention(self.x.double(), self.weights64, self.dims.n_heads, base=self.base)
        self.c, self.k_rope = cache["c"], cache["k_rope"]  # float64

    def past(self, s: int) -> dict[str, torch.Tensor]:
        return {"c": self.c[:, :s], "k_rope": self.k_rope[:, :s]}  # float64

    def variants(self, s: int, n: int) -> dict[str, Any]:
        x = self.x[:, s : s + n].double()
        return layer_variants(x, self.weights64, self.dims.n_heads, self.past(s), self.base)


def pair(got: Any, what: str) -> tuple[Any, Any]:
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
class Call:
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
    how: Call,
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


def _queue_call(session: SubmissionLink, seq: Tokens, s: int, n: int, how: Call) -> Pending:
    """Queue the call on tokens s..s+n over the true past (float32); a decode call (n = 1) measured."""
    x = seq.x[:, s : s + n]
    past = {key: value.float() for key, value in seq.past(s).items()}
    cache: Any = past if s > 0 else {"none": None, "empty": {}, "omit": None}[how.first_cache]
    args, kwargs = call_args(x, seq.weights, seq.dims.n_heads, cache, seq.base, how, s == 0)
    if n == 1:
        return session.call_measured_later(ENTRY_POINT, *args, **kwargs)
    return session.call_later(ENTRY_POINT, *args, **kwargs)


def _check_call(
    report: CheckReport, seq: Tokens, s: int, n: int, answer: Pending, cache_ev: Evidence, what: str
) -> Comparison:
    """The answer to the call on tokens s..s+n: compare y, record the cache's comparison; a decode
    call's largest tensor against the absorption rule."""
    with submission_context(f"{what}: x {(seq.B, n, seq.dims.d)} with {s} positions cached"):
        got = answer.value()
    if n == 1:
        got, largest = got
    y, got_cache = pair(got, what)
    if n == 1:
        expect_absorbed(report, seq.dims, seq.B, s + n, Measured(largest, None), None, what)
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


def schedule_test(
    report: CheckReport, session: SubmissionLink, seq: Tokens, chunks: Sequence[int], how: Call
) -> None:
    """The calls of `chunks` (token counts), queued together, each answer checked in order."""
    starts = [sum(chunks[:i]) for i in range(len(chunks))]
    answers = [_queue_call(session, seq, s, n, how) for s, n in zip(starts, chunks, strict=True)]
    y_ev, cache_ev = Evidence(), Evidence()
    for i, (s, n, answer) in enumerate(zip(starts, chunks, answers, strict=True)):
        what = f"call {i + 1} (tokens {s}..{s + n - 1})"
        try:
            y_ev.add(_check_call(report, seq, s, n, answer, cache_ev, what))
        except Mismatch:
            if not (y_ev.failed or cache_ev.failed):
                raise
            break  # report the first mismatch, not a later crash
    y_ev.conclude(report)
    cache_ev.conclude(report)


def changed_cache_test(report: CheckReport, session: SubmissionLink, seq: Tokens, prompt: int) -> None:
    """The cache handed in has one changed position; the output must follow it. The prompt is a call
    of its own before it, so a solution that keeps the past elsewhere has it to keep."""
    row = seq.rng.py.randrange(1, prompt - 1)
    changed = {key: value.clone() for key, value in seq.past(prompt).items()}  # float64
    changed["c"][:, row] = seq.rng.randn(seq.B, seq.dims.d_c).double() * 3
    changed["k_rope"][:, row] = seq.rng.randn(seq.B, seq.dims.d_rope).double() * 3
    x = seq.x[:, prompt : prompt + 1]
    H = seq.dims.n_heads
    first = session.call_later(ENTRY_POINT, seq.x[:, :prompt], seq.weights, H, None, base=seq.base)
    cache = {key: value.float() for key, value in changed.items()}
    decode = session.call_measured_later(ENTRY_POINT, x, seq.weights, H, cache, base=seq.base)
    with submission_context(f"a {prompt}-token prompt"):
        first.value()
    with submission_context(f"one token on a {prompt}-token cache"):
        got, largest = decode.value()
    y, _ = pair(got, "the call")
    expect_absorbed(report, seq.dims, seq.B, prompt + 1, Measured(largest, None), None, "the call")
    want = mla_layer(x.double(), seq.weights64, H, changed, seq.base).y
    result = compare(y, want, "y over the changed cache")
    if result.ok:
        return
    if close(result.tensor, seq.y[:, prompt : prompt + 1]):
        report.diagnose(GLOBAL_STATE)
        raise Mismatch(
            f"after the grader changed position {row} of cache['c'] and cache['k_rope'], y was unchanged. "
            f"Likely cause: {GLOBAL_STATE}"
        )
    variants = layer_variants(x.double(), seq.weights64, H, changed, seq.base)
    named = next((m for m, out in variants.items() if close(result.tensor, out.y)), None)
    if named:
        report.diagnose(named)
        raise Mismatch(f"{result.message}. Likely cause: {named}")
    raise Mismatch(result.message)

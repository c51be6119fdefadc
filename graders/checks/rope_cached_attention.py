"""rope-cached-attention: `apply_rope(x, positions, base)`, `rope_attention(..., cache, base) -> (y, cache)`.

apply_rope is compared with graders/reference/rope.py on shared (T,) and per-row (B, T)
positions. rope_attention is run over schedules of calls (a whole prompt, chunks of one,
a long decode one token at a time) and every call's y and returned cache are compared
with one full forward pass over all the tokens. Every call gets a cache the grader
built from its reference (see rope_common), so the probe that changes a cached row is
indistinguishable from an ordinary call. The base is 10000 (left out, the default) in
some tests and something else, passed by keyword or by position, in the others; RoPE
positions stay below 64, where every float32 formulation of theta agrees (CONTRACT.md).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import torch

from graders.checks import cost, rope_attention_cost
from graders.checks.attention_common import (
    Comparison,
    Evidence,
    Variant,
    compare,
    expect_match,
    fail,
    make_generator,
    randn,
    random_attention_weights,
    scale_factor,
    submission_context,
)
from graders.checks.remembered import remembered
from graders.checks.report import CheckReport, Mismatch, close, run_test
from graders.checks.rope_common import (
    BASE_IGNORED,
    CACHE_UNROTATED,
    DEFAULT_BASE,
    INTERLEAVED,
    NO_ROPE_K,
    NO_ROPE_Q,
    ROTATES_VALUES,
    SCALE_SQRT_D,
    THETA_EXPONENT,
    WRONG_WAY,
    LayerOut,
    cache_tensor,
    cache_variants,
    call_layer,
    rope_layer,
    wrong_rotations,
)
from graders.checks.serving_common import figure_test
from graders.reference.rope import apply_rope, rope_attention
from graders.sandbox.protocol import SubmissionLink

SLUG = "rope-cached-attention"
ENTRY_POINT = "rope_attention"
APPLY = "apply_rope"

POSITIONS_RESTART = (
    "positions restart at 0 in every call: with S_past tokens in the cache, the new tokens sit at "
    "positions S_past .. S_past + T - 1 (take S_past from cache['k'].shape[2])"
)
ROTATES_TWICE = (
    "the cached keys are rotated again: the cache already holds rotated keys, so rotate only the new ones"
)
MASK_NOT_OFFSET = (
    "the causal mask is not offset by the cache length: new query i sits at position S_past + i and sees "
    "keys 0 .. S_past + i (a bottom-right mask, tril(S_past))"
)
ROW_POSITIONS = "per-row positions (B, T) are not used row by row: row b must be rotated at positions[b]"
GLOBAL_STATE = (
    "the output ignored a change to the cached keys and values: read the past only from the cache passed in"
)
KNOWN_MISTAKES = (
    INTERLEAVED,
    WRONG_WAY,
    THETA_EXPONENT,
    BASE_IGNORED,
    ROTATES_VALUES,
    NO_ROPE_Q,
    NO_ROPE_K,
    CACHE_UNROTATED,
    POSITIONS_RESTART,
    ROTATES_TWICE,
    MASK_NOT_OFFSET,
    ROW_POSITIONS,
    SCALE_SQRT_D,
    GLOBAL_STATE,
)

BASES = (500.0, 2500.0, 40000.0)  # never 10000: a non-default base tells BASE_IGNORED apart


# --- apply_rope -----------------------------------------------------------------------------------


def rope_variants(x: torch.Tensor, positions: torch.Tensor, base: float) -> list[Variant]:
    variants: list[Variant] = [((m,), rotate(x, positions, base)) for m, rotate in wrong_rotations(base)]
    if positions.dim() == 2:
        variants.append(((ROW_POSITIONS,), apply_rope(x, positions[0], base)))
    return variants


def _apply_rope_test(
    session: SubmissionLink, report: CheckReport, gen: torch.Generator, rng: random.Random, per_row: bool
) -> Callable[[], None]:
    B, H, T, hd = (3, 2, 5, 16) if per_row else (2, 3, 6, 10)
    x = randn(gen, B, H, T, hd)
    if per_row:  # distinct rows, positions below 64
        positions = torch.stack([torch.randperm(63, generator=gen)[:T] for _ in range(B)])
    else:
        start = rng.randrange(1, 50)
        positions = torch.arange(start, start + T)
    base = rng.choice(BASES) if per_row else DEFAULT_BASE
    want = apply_rope(x.double(), positions, base).float()

    def body() -> None:
        if not session.has(APPLY):
            raise Mismatch(f"your code has no top-level `{APPLY}`: the grader calls it by that name")
        with submission_context(f"apply_rope(x {tuple(x.shape)}, positions {tuple(positions.shape)})"):
            got = (
                session.call(APPLY, x, positions, base=base) if per_row else session.call(APPLY, x, positions)
            )
        expect_match(
            report, got, want, "apply_rope's output", partial(rope_variants, x.double(), positions, base)
        )

    return body


# --- rope_attention over a schedule of calls ------------------------------------------------------


@dataclass
class _Sequence:
    """Tokens x (B, S, d) and one full forward over all of them (float64), the target of every call."""

    gen: torch.Generator
    B: int
    S: int
    d: int
    h: int
    base: float
    x: torch.Tensor = field(init=False)

    def __post_init__(self) -> None:
        self.w_qkv, self.w_o = random_attention_weights(self.gen, self.d)
        self.x = randn(self.gen, self.B, self.S, self.d)
        y, cache = rope_attention(
            self.x.double(), self.w_qkv.double(), self.w_o.double(), self.h, base=self.base
        )
        self.y, self.k, self.v = y, cache["k"], cache["v"]  # float64

    def past(self, s: int) -> dict[str, torch.Tensor]:
        return {"k": self.k[:, :, :s], "v": self.v[:, :, :s]}  # float64

    def variants(self, s: int, n: int, past: dict[str, torch.Tensor] | None = None) -> dict[str, LayerOut]:
        """Each mistake's (y, k, v) for the call on tokens s..s+n over `past` (default: the true cache)."""
        past = self.past(s) if past is None else past
        x = self.x[:, s : s + n].double()
        return call_variants(x, self.w_qkv.double(), self.w_o.double(), self.h, self.base, s, past)


@remembered  # y, k and v of a wrong call each ask for them, as does every golden mistake on a seed
def call_variants(
    x: torch.Tensor,
    w_qkv: torch.Tensor,
    w_o: torch.Tensor,
    h: int,
    base: float,
    s: int,
    past: dict[str, torch.Tensor],
) -> dict[str, LayerOut]:
    """Each mistake's (y, k, v) for a call on the n tokens x (B, n, d) at positions s..s+n over
    `past` (k, v each (B, h, s, hd)); float64."""
    n, d = x.shape[1], x.shape[2]
    positions = torch.arange(s, s + n)
    causal = torch.ones(n, s + n, dtype=torch.bool).tril(s)[None, None]  # (1, 1, n, S)
    layer = partial(rope_layer, x, w_qkv, w_o, h, past, base=base)
    out = {
        ROTATES_VALUES: layer(positions, causal, rotate_v=True),
        NO_ROPE_Q: layer(positions, causal, rotate_q=False),
        NO_ROPE_K: layer(positions, causal, rotate_k=False),
        SCALE_SQRT_D: layer(positions, causal, scale=scale_factor("sqrt_d", d, d // h)),
    }
    for mistake, rotate in wrong_rotations(base):
        out[mistake] = layer(positions, causal, rotate=rotate)
    if s > 0:
        out[POSITIONS_RESTART] = layer(torch.arange(n), causal)
        out[ROTATES_TWICE] = layer(positions, causal, rerotate_cached=True)
        out[MASK_NOT_OFFSET] = layer(positions, torch.ones(n, s + n, dtype=torch.bool).tril(0)[None, None])
    out[CACHE_UNROTATED] = layer(positions, causal, rotate_k=False)  # its k is the unrotated cache
    return out


def _y_variants(seq: _Sequence, s: int, n: int, past: dict[str, torch.Tensor] | None = None) -> list[Variant]:
    return [((m,), out.y) for m, out in seq.variants(s, n, past).items() if m != CACHE_UNROTATED]


def _k_variants(seq: _Sequence, s: int, n: int, want: torch.Tensor) -> list[Variant]:
    outs = seq.variants(s, n)
    wrong = [((m,), outs[m].k) for m in (POSITIONS_RESTART, CACHE_UNROTATED, ROTATES_TWICE) if m in outs]
    return cache_variants("k", want, seq.v[:, :, : s + n], wrong, n)


def _v_variants(seq: _Sequence, s: int, n: int, want: torch.Tensor) -> list[Variant]:
    wrong = [((ROTATES_VALUES,), seq.variants(s, n)[ROTATES_VALUES].v)]
    return cache_variants("v", want, seq.k[:, :, : s + n], wrong, n)


@dataclass
class _Call:
    """How one call is made: the cache for the first call (None, {} or left out) and how base is passed."""

    first_cache: str = "omit"  # "omit" | "none" | "empty"
    base_as: str = "keyword"  # "omit" | "keyword" | "positional"


def _one_call(
    session: SubmissionLink, seq: _Sequence, s: int, n: int, how: _Call, cache_ev: Evidence, what: str
) -> Comparison:
    """Call the submission on tokens s..s+n over the true past; compare y, record the cache's comparison."""
    x = seq.x[:, s : s + n]
    args: list[Any] = [x, seq.w_qkv, seq.w_o, seq.h]
    past = {key: value.float() for key, value in seq.past(s).items()}
    cache: Any = past if s > 0 else {"none": None, "empty": {}, "omit": None}[how.first_cache]
    leave_out_cache = s == 0 and how.first_cache == "omit"
    kwargs: dict[str, Any] = {}
    if how.base_as == "positional":
        args += [cache, seq.base]
    else:
        if not leave_out_cache:
            args.append(cache)
        if how.base_as == "keyword":
            kwargs["base"] = seq.base
    with submission_context(f"{what}: x {tuple(x.shape)} with {s} tokens cached"):
        y, got_cache = call_layer(session.call(ENTRY_POINT, *args, **kwargs), what)
    for key, want, variants in (("k", seq.k, _k_variants), ("v", seq.v, _v_variants)):
        target = want[:, :, : s + n].float()
        got = cache_tensor(got_cache, key, what)
        label = f"{what}, cache[{key!r}] (B, n_heads, S_past + T, hd)"
        cache_ev.add(compare(got, target, label, partial(variants, seq, s, n, target.double())))
    return compare(y, seq.y[:, s : s + n].float(), f"{what}, y", partial(_y_variants, seq, s, n))


def _conclude(report: CheckReport, y_ev: Evidence, cache_ev: Evidence) -> None:
    """Fail on the first wrong y (or, with every y right, the first wrong cache), naming what fits."""
    y_ev.conclude(report)
    cache_ev.conclude(report)


def _schedule_test(
    session: SubmissionLink, report: CheckReport, seq: _Sequence, chunks: Sequence[int], how: _Call
) -> Callable[[], None]:
    def body() -> None:
        y_ev, cache_ev = Evidence(), Evidence()
        s = 0
        for i, n in enumerate(chunks):
            what = f"call {i + 1} (tokens {s}..{s + n - 1})"
            try:
                y_ev.add(_one_call(session, seq, s, n, how, cache_ev, what))
            except Mismatch:
                if not (y_ev.failed or cache_ev.failed):
                    raise
                break  # report the first mismatch, not a later crash
            s += n
        _conclude(report, y_ev, cache_ev)

    return body


def _changed_cache_test(
    session: SubmissionLink, report: CheckReport, seq: _Sequence, prompt: int, row: int
) -> Callable[[], None]:
    """The cache handed in has one changed row; the output must follow it."""
    changed = {key: value.clone() for key, value in seq.past(prompt).items()}  # float64
    changed["k"][:, :, row] = randn(seq.gen, seq.B, seq.h, seq.d // seq.h).double()
    changed["v"][:, :, row] = randn(seq.gen, seq.B, seq.h, seq.d // seq.h).double() * 3
    x = seq.x[:, prompt : prompt + 1]
    positions = torch.arange(prompt, prompt + 1)
    visible = torch.ones(1, 1, 1, prompt + 1, dtype=torch.bool)
    want = rope_layer(
        x.double(), seq.w_qkv.double(), seq.w_o.double(), seq.h, changed, positions, visible, seq.base
    ).y.float()

    def body() -> None:
        with submission_context(f"a {prompt}-token prompt"):
            session.call(ENTRY_POINT, seq.x[:, :prompt], seq.w_qkv, seq.w_o, seq.h, None, base=seq.base)
        cache = {key: value.float() for key, value in changed.items()}
        with submission_context(f"one token on a {prompt}-token cache"):
            y, _ = call_layer(
                session.call(ENTRY_POINT, x, seq.w_qkv, seq.w_o, seq.h, cache, base=seq.base), "the call"
            )
        if close(y, seq.y[:, prompt : prompt + 1].float()):
            report.diagnose(GLOBAL_STATE)
            raise Mismatch(
                f"after the grader changed row {row} of cache['k'] and cache['v'], y was unchanged. "
                f"Likely cause: {GLOBAL_STATE}"
            )
        result = compare(y, want, "y over the changed cache", partial(_y_variants, seq, prompt, 1, changed))
        if not result.ok:
            fail(report, result, result.matches[0] if result.matches else ())

    return body


def run(session: SubmissionLink, seed: int | None = None) -> CheckReport:
    gen = make_generator(seed)
    rng = random.Random(int(torch.randint(0, 2**31, (1,), generator=gen)))
    report = CheckReport()
    run_test(
        report,
        "apply_rope rotates component i with i + hd/2 at shared positions (T,), default base, hd=10",
        _apply_rope_test(session, report, gen, rng, per_row=False),
    )
    run_test(
        report,
        "apply_rope with per-row positions (B, T) and a base other than 10000, B=3 hd=16",
        _apply_rope_test(session, report, gen, rng, per_row=True),
    )
    seq = _Sequence(gen, 1, 7, 32, 4, DEFAULT_BASE)
    run_test(
        report,
        "a 7-token prompt, no cache passed, default base, matches one full forward, B=1 d=32 h=4",
        _schedule_test(session, report, seq, [7], _Call("omit", "omit")),
    )
    base = rng.choice(BASES)
    chunks = [rng.randrange(3, 6), rng.randrange(1, 4), rng.randrange(3, 7)]
    seq = _Sequence(gen, 2, sum(chunks), 30, 3, base)
    run_test(
        report,
        f"chunked prefill in chunks of {', '.join(map(str, chunks))} from cache={{}} equals one pass, "
        f"B=2 d=30 h=3 base={base:g}",
        _schedule_test(session, report, seq, chunks, _Call("empty", "keyword")),
    )
    base = rng.choice(BASES)
    prompt, steps = rng.randrange(4, 8), 20
    seq = _Sequence(gen, 3, prompt + steps, 48, 3, base)
    run_test(
        report,
        f"a {prompt}-token prompt (cache=None) then {steps} decode steps of one token, "
        f"base={base:g} passed by position, B=3 d=48 h=3",
        _schedule_test(session, report, seq, [prompt] + [1] * steps, _Call("none", "positional")),
    )
    base = rng.choice(BASES)
    seq = _Sequence(gen, 2, 7, 32, 4, base)
    run_test(
        report,
        "reads the past from the cache passed in: a changed cached key and value change the output, "
        "B=2 d=32 h=4",
        _changed_cache_test(session, report, seq, 6, rng.randrange(1, 5)),
    )
    figure_test(
        report, rope_attention_cost.NAME, lambda: rope_attention_cost.figure(gen, cost.measurer(session))
    )
    return report

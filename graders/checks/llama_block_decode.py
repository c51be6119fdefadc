"""llama-block-decode: `llama_block(x, weights, n_heads, n_kv_heads, cache=None, base=10000.0, eps=1e-5)`.

Every run draws fresh sizes (B, d, H, H_kv, hd, d // H and f all different, H * hd never d, so a
swap of two changes the answer) and weights (the two norms' weights drawn apart, around 1). Each
token's input is scaled by its own factor, so a norm over the wrong dimensions changes the answer.
The layer runs over schedules of calls (a whole prompt with the cache, base and eps left out;
chunks from cache={} with a base by keyword; a prompt from cache=None then single tokens with base
and eps by position; small activations with a non-default eps, where eps inside or outside the
root differ) and every call's y and returned cache ("k", rotated, and "v", each (B, H_kv, S, hd))
are compared with one full pass over all the tokens (graders/reference/llama.py, float64). Every
call gets a cache the grader built itself with only "k" and "v", so a solution that relies on
anything else in it fails, and the probe that changes a cached position looks like any other call.
RoPE positions stay below 64 (shared/CONTRACT.md). The last test asks for H not a multiple of H_kv
and expects ValueError.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache, partial
from typing import Any

import torch

from graders.checks import cost, llama_block_cost
from graders.checks.attention_common import Evidence, Variant, compare, submission_context
from graders.checks.llama_block_decode_variants import (
    CACHE_AFTER_REPEAT,
    CACHE_MISTAKES,
    CACHE_NEW_ONLY,
    CACHE_UNROTATED,
    GLOBAL_STATE,
    NO_VALUE_ERROR,
    NUMERICAL_MISTAKES,
    layer_variants,
    llama_layer,
)
from graders.checks.report import CheckReport, Mismatch, close, run_test
from graders.checks.rope_common import DEFAULT_BASE, cache_tensor, call_layer
from graders.checks.serving_common import Rng, figure_test
from graders.reference.gqa import repeat_kv
from graders.reference.llama import DEFAULT_EPS, LlamaDims, llama_block, random_weights
from graders.sandbox.protocol import SubmissionError, SubmissionLink

SLUG = "llama-block-decode"
ENTRY_POINT = "llama_block"
KNOWN_MISTAKES = (*NUMERICAL_MISTAKES, *CACHE_MISTAKES, GLOBAL_STATE, NO_VALUE_ERROR)
__all__ = ["ENTRY_POINT", "KNOWN_MISTAKES", "SLUG", "run"]

BASES = (500.0, 2500.0, 40000.0)  # never 10000: a non-default base tells BASE_IGNORED apart
SMALL_EPS = (1e-3, 2e-3, 4e-3)  # with activations of about SMALL_SCALE, eps is a third of mean(x**2) or more
SMALL_SCALE = 0.05
HEADS = ((4, 2), (6, 2), (6, 3), (8, 2), (8, 4))  # (H, H_kv): 1 < H_kv < H, so i // g and i % H_kv differ
MAX_MISMATCHES = 2  # mismatching calls compared before concluding: enough to agree on a name


# --- sizes and inputs -----------------------------------------------------------------------------


def random_dims(rng: Rng, B: int) -> LlamaDims:
    """H, H_kv, hd (even: RoPE pairs), d // H, d and f all different from each other and from B."""
    py = rng.py
    while True:
        H, H_kv = py.choice(HEADS)
        hd, d, f = py.choice([4, 6, 8, 10]), py.choice([20, 28, 36, 44]), py.choice([40, 52, 60])
        sizes = [B, H, H_kv, hd, d // H, d, f]
        if len(set(sizes)) == len(sizes) and H * hd != d:
            return LlamaDims(d, H, H_kv, hd, f)


def weights_for(rng: Rng, dims: LlamaDims) -> dict[str, torch.Tensor]:
    return random_weights(rng.torch, dims.d, dims.n_heads, dims.n_kv_heads, dims.hd, dims.f)


def as_double(weights: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {name: w.double() for name, w in weights.items()}


def tokens(rng: Rng, B: int, S: int, d: int, scale: float = 1.0) -> torch.Tensor:
    """x (B, S, d), each token scaled by its own factor in [0.5, 2) times `scale`."""
    return rng.randn(B, S, d) * (0.5 + 1.5 * rng.rand(B, S, 1)) * scale


@dataclass
class _Sequence:
    """Tokens x (B, S, d) and one full pass over all of them (float64), the target of every call."""

    rng: Rng
    B: int
    S: int
    dims: LlamaDims
    base: float
    eps: float
    scale: float = 1.0
    weights: dict[str, torch.Tensor] = field(init=False)
    x: torch.Tensor = field(init=False)

    def __post_init__(self) -> None:
        self.weights = weights_for(self.rng, self.dims)
        self.x = tokens(self.rng, self.B, self.S, self.dims.d, self.scale)
        d = self.dims
        self.y, cache = llama_block(
            self.x.double(), as_double(self.weights), d.n_heads, d.n_kv_heads, None, self.base, self.eps
        )
        self.k, self.v = cache["k"], cache["v"]  # float64, (B, H_kv, S, hd)

    def past(self, s: int) -> dict[str, torch.Tensor]:
        return {"k": self.k[:, :, :s], "v": self.v[:, :, :s]}  # float64

    def variants(self, s: int, n: int, past: dict[str, torch.Tensor] | None = None) -> dict[str, Any]:
        x = self.x[:, s : s + n].double()
        past = self.past(s) if past is None else past
        d = self.dims
        return layer_variants(x, as_double(self.weights), d.n_heads, d.n_kv_heads, past, self.base, self.eps)


# --- one call -------------------------------------------------------------------------------------


def _cache_variants(
    outs: dict[str, Any], y: torch.Tensor, key: str, want: torch.Tensor, n: int, n_rep: int
) -> list[Variant]:
    """Wrong contents of cache[key], from the mistakes whose y is the y the submission returned (a
    cache left unrotated and keys never rotated store the same, but only one gives a right y), the
    heads repeated (either order) and the new positions alone."""
    wrong: list[Variant] = [((m,), getattr(out, key)) for m, out in outs.items() if close(y, out.y)]
    wrong += [
        ((CACHE_AFTER_REPEAT,), repeat_kv(want, n_rep)),
        ((CACHE_AFTER_REPEAT,), want.repeat(1, n_rep, 1, 1)),
    ]
    if 0 < n < want.shape[-2]:
        wrong.append(((CACHE_NEW_ONLY,), want[:, :, -n:]))
    return wrong


@dataclass
class _Call:
    """How a schedule's calls are made: the first call's cache (left out, None or {}) and how base
    and eps are passed (left out, by keyword or by position)."""

    first_cache: str = "omit"  # "omit" | "none" | "empty"
    args_as: str = "keyword"  # "omit" | "keyword" | "positional"


def call_args(
    seq: _Sequence, x: torch.Tensor, cache: Any, how: _Call, first: bool
) -> tuple[list[Any], dict[str, Any]]:
    args: list[Any] = [x, seq.weights, seq.dims.n_heads, seq.dims.n_kv_heads]
    if how.args_as == "positional":
        return [*args, cache, seq.base, seq.eps], {}
    if not (first and how.first_cache == "omit"):
        args.append(cache)
    return args, ({"base": seq.base, "eps": seq.eps} if how.args_as == "keyword" else {})


def _one_call(
    session: SubmissionLink, seq: _Sequence, s: int, n: int, how: _Call, cache_ev: Evidence, what: str
) -> Any:
    """Call the submission on tokens s..s+n over the true past; compare y, record the cache's."""
    x = seq.x[:, s : s + n]
    past = {key: value.float() for key, value in seq.past(s).items()}
    given: Any = past if s > 0 else {"none": None, "empty": {}, "omit": None}[how.first_cache]
    args, kwargs = call_args(seq, x, given, how, s == 0)
    with submission_context(f"{what}: x {tuple(x.shape)} with {s} positions cached"):
        got = session.call(ENTRY_POINT, *args, **kwargs)
    y, got_cache = call_layer(got, what)
    variants = cache(partial(seq.variants, s, n))  # computed once, and only on a mismatch
    y_cmp = compare(
        y,
        seq.y[:, s : s + n],
        f"{what}, y",
        lambda: [((m,), out.y) for m, out in variants().items() if m != CACHE_UNROTATED or s == 0],
    )
    n_rep = seq.dims.n_heads // seq.dims.n_kv_heads
    for key, full in (("k", seq.k), ("v", seq.v)):
        want = full[:, :, : s + n]
        label = f"{what}, cache[{key!r}] (B, H_kv, S_past + T, hd)"
        wrong = partial(lambda k, w: _cache_variants(variants(), y_cmp.tensor, k, w, n, n_rep), key, want)
        cache_ev.add(compare(cache_tensor(got_cache, key, what), want, label, wrong))
    return y_cmp


def _schedule_test(
    session: SubmissionLink, report: CheckReport, seq: _Sequence, chunks: Sequence[int], how: _Call
) -> None:
    y_ev, cache_ev = Evidence(), Evidence()
    s, mismatches = 0, 0
    for i, n in enumerate(chunks):
        what = f"call {i + 1} (tokens {s}..{s + n - 1})"
        try:
            y_cmp = _one_call(session, seq, s, n, how, cache_ev, what)
        except Mismatch:
            if not (y_ev.failed or cache_ev.failed):
                raise
            break  # report the first mismatch, not a later crash
        y_ev.add(y_cmp)
        mismatches += y_ev.failed or cache_ev.failed
        if mismatches >= MAX_MISMATCHES:
            break
        s += n
    y_ev.conclude(report)
    cache_ev.conclude(report)


def _changed_cache_test(session: SubmissionLink, report: CheckReport, seq: _Sequence, prompt: int) -> None:
    """The cache handed in has one changed position; the output must follow it."""
    d = seq.dims
    row = seq.rng.py.randrange(1, prompt - 1)
    changed = {key: value.clone() for key, value in seq.past(prompt).items()}  # float64
    changed["k"][:, :, row] = seq.rng.randn(seq.B, d.n_kv_heads, d.hd).double() * 3
    changed["v"][:, :, row] = seq.rng.randn(seq.B, d.n_kv_heads, d.hd).double() * 3
    x = seq.x[:, prompt : prompt + 1]
    w64 = as_double(seq.weights)
    want = llama_layer(x.double(), w64, d.n_heads, d.n_kv_heads, changed, seq.base, seq.eps).y
    with submission_context(f"a {prompt}-token prompt"):
        session.call(
            ENTRY_POINT, seq.x[:, :prompt], seq.weights, d.n_heads, d.n_kv_heads, None, base=seq.base
        )
    cache = {key: value.float() for key, value in changed.items()}
    with submission_context(f"one token on a {prompt}-token cache"):
        got = session.call(ENTRY_POINT, x, seq.weights, d.n_heads, d.n_kv_heads, cache, base=seq.base)
    result = compare(call_layer(got, "the call")[0], want, "y over the changed cache")
    if result.ok:
        return
    if close(result.tensor, seq.y[:, prompt : prompt + 1]):
        report.diagnose(GLOBAL_STATE)
        raise Mismatch(
            f"after the grader changed position {row} of cache['k'] and cache['v'], y was unchanged. "
            f"Likely cause: {GLOBAL_STATE}"
        )
    outs = layer_variants(x.double(), w64, d.n_heads, d.n_kv_heads, changed, seq.base, seq.eps)
    named = next((m for m, out in outs.items() if close(result.tensor, out.y)), None)
    if named:
        report.diagnose(named)
        raise Mismatch(f"{result.message}. Likely cause: {named}")
    raise Mismatch(result.message)


def _value_error_test(session: SubmissionLink, report: CheckReport, rng: Rng, H: int, H_kv: int) -> None:
    """H not a multiple of H_kv, with weights whose shapes fit those counts: ValueError, nothing else."""
    d, hd, f = 20, 4, 40
    weights = {
        name: torch.randn(*shape, generator=rng.torch) / shape[0] ** 0.5
        if len(shape) == 2
        else torch.ones(shape)
        for name, shape in LlamaDims(d, H, H_kv, hd, f).shapes().items()
    }
    x = tokens(rng, 1, 3, d)
    try:
        session.call(ENTRY_POINT, x, weights, H, H_kv)
    except SubmissionError as exc:
        if exc.type_name == "ValueError":
            return
        if exc.type_name == "NotImplementedError":  # the starter: nothing written yet, no mistake to name
            raise Mismatch("your code raised NotImplementedError; expected ValueError") from None
        report.diagnose(NO_VALUE_ERROR)
        raise Mismatch(
            f"your code raised {exc.type_name}: {exc.message}; expected ValueError. "
            f"Likely cause: {NO_VALUE_ERROR}"
        ) from None
    report.diagnose(NO_VALUE_ERROR)
    raise Mismatch(
        f"n_heads={H}, n_kv_heads={H_kv}: your code returned, expected ValueError. "
        f"Likely cause: {NO_VALUE_ERROR}"
    )


# --- the battery ----------------------------------------------------------------------------------


def run(session: SubmissionLink, seed: int | None = None) -> CheckReport:
    """The battery; `seed` makes a run reproducible (tests), None draws fresh inputs (grading)."""
    report = CheckReport()
    rng = Rng(seed)
    py = rng.py

    def check(name: str, body: Callable[[SubmissionLink, CheckReport], None]) -> bool:
        return run_test(report, name, partial(body, session, report))

    def sizes(dims: LlamaDims) -> str:
        return f"d={dims.d} H={dims.n_heads} H_kv={dims.n_kv_heads} hd={dims.hd} f={dims.f}"

    T = py.randrange(5, 9)
    seq = _Sequence(rng, 1, T, random_dims(rng, 1), DEFAULT_BASE, DEFAULT_EPS)
    check(
        f"a {T}-token prompt, cache, base and eps left out: y and the cache's rotated k and v, "
        f"B=1 {sizes(seq.dims)}",
        partial(_schedule_test, seq=seq, chunks=[T], how=_Call("omit", "omit")),
    )
    base = py.choice(BASES)
    chunks = [py.randrange(3, 6), py.randrange(2, 4), py.randrange(3, 7)]
    seq = _Sequence(rng, 2, sum(chunks), random_dims(rng, 2), base, DEFAULT_EPS)
    check(
        f"chunked prefill in chunks of {', '.join(map(str, chunks))} from cache={{}} equals one pass, "
        f"base={base:g} by keyword, B=2 {sizes(seq.dims)}",
        partial(_schedule_test, seq=seq, chunks=chunks, how=_Call("empty", "keyword")),
    )
    base = py.choice(BASES)
    prompt, steps = py.randrange(4, 8), 6
    seq = _Sequence(rng, 3, prompt + steps, random_dims(rng, 3), base, 1e-6)
    check(
        f"a {prompt}-token prompt (cache=None) then {steps} decode steps of one token, base={base:g} and "
        f"eps=1e-6 by position, B=3 {sizes(seq.dims)}",
        partial(_schedule_test, seq=seq, chunks=[prompt] + [1] * steps, how=_Call("none", "positional")),
    )
    eps, prompt = py.choice(SMALL_EPS), py.randrange(4, 7)
    seq = _Sequence(rng, 2, prompt + 3, random_dims(rng, 2), DEFAULT_BASE, eps, SMALL_SCALE)
    check(
        f"small activations (about {SMALL_SCALE} per component) with eps={eps:g} by keyword: "
        f"a {prompt}-token prompt, a 2-token chunk, one token, B=2 {sizes(seq.dims)}",
        partial(_schedule_test, seq=seq, chunks=[prompt, 2, 1], how=_Call("none", "keyword")),
    )
    seq = _Sequence(rng, 2, 8, random_dims(rng, 2), py.choice(BASES), DEFAULT_EPS)
    check(
        "reads the past from the cache passed in: changed cached keys and values change the output, "
        f"B=2 {sizes(seq.dims)}",
        partial(_changed_cache_test, seq=seq, prompt=7),
    )
    figure_test(report, llama_block_cost.NAME, lambda: llama_block_cost.figure(rng, cost.measurer(session)))
    H, H_kv = py.choice([(6, 4), (8, 3), (4, 3)])
    check(
        f"n_heads={H}, n_kv_heads={H_kv} (not a multiple) raises ValueError",
        partial(_value_error_test, rng=rng, H=H, H_kv=H_kv),
    )
    return report

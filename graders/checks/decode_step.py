"""decode-step: `step(x, w_qkv, w_o, n_heads, cache) -> (B, 1, d)`.

The cache is a dict that lives in the submission's process (a Handle here); after t
steps cache["k"] and cache["v"] must hold (B, n_heads, t, hd). Every output must equal
row t-1 of the full causal forward pass. The tests interleave sequences with separate
caches, hand `step` a cache the grader built, and change a cached row to prove the past
is read from the cache and nowhere else.

Every call is a possible probe. Before each step on a non-empty cache the grader writes
cache["k"] and cache["v"] itself (setitem: new tensors every time, so "is this still the
tensor I stored?" tells a submission nothing), and about one call in three, in every
test, at a random step and position, what it writes has one position changed; the
output is then compared with the reference over exactly what was handed. A submission
that reads the cache only when a call looks like a probe (a known row changed, a dict it
did not fill) cannot tell which calls are probes without reading the cache. The mistakes it names,
and what each returns, are decode_step_mistakes.py.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import numpy as np
import torch

from graders.checks import decode_step_cost
from graders.checks.attention_common import (
    Comparison,
    Evidence,
    Variant,
    compare,
    decode_tensor,
    expect_match,
    fail,
    make_generator,
    randn,
    random_attention_weights,
    submission_context,
)
from graders.checks.decode_step_mistakes import (
    GLOBAL_STATE,
    KNOWN_MISTAKES,
    cache_variants,
    step_variants,
)
from graders.checks.report import CheckReport, Mismatch, close, run_test
from graders.checks.serving_common import figure_test
from graders.reference.attention import causal_self_attention
from graders.reference.decode import prefill_cache
from graders.reference.decode import step as reference_step
from graders.sandbox.protocol import Handle, Pending, SubmissionError, SubmissionLink

SLUG = "decode-step"
__all__ = ["ENTRY_POINT", "KNOWN_MISTAKES", "SEQUENCES", "SLUG", "cache_variants", "run", "step_variants"]
ENTRY_POINT = "step"

# (B, steps, d, n_heads); no d == hd**2, where sqrt(d) and hd are the same number
SEQUENCES = [(2, 6, 32, 4), (3, 5, 48, 3), (2, 4, 96, 8)]
CACHE_LAYOUT = (2, 3, 32, 4)
INTERLEAVED = (3, 2, 4, 32, 4)  # sequences, B, steps each, d, n_heads
GRADER_BUILT = (3, 5, 48, 3)  # B, cached tokens, d, n_heads
CORRUPTED = (2, 4, 32, 4)  # B, tokens stepped before the corruption, d, n_heads
CHANGE_RATE = 1 / 3  # the share of calls, in every test, whose cache has one position changed


class _IgnoredChange(Mismatch):
    """The output did not move when the grader changed the cached past: it came from elsewhere."""


def _cache_tensor(cache: Any, key: str, after: str) -> torch.Tensor:
    if not isinstance(cache, dict):
        raise Mismatch(f"{after}, the cache could not be read back as a dict")
    if key not in cache:
        raise Mismatch(
            f"{after}, the cache has no {key!r} entry: store the keys and values in cache['k'], cache['v']"
        )
    if isinstance(cache[key], np.ndarray):  # the grader writes tensors in; the next step cats onto them
        raise Mismatch(f"{after}, cache[{key!r}] is a NumPy array: keep the cache as torch tensors")
    return decode_tensor(cache[key], f"{after}, cache[{key!r}]")


def expect_cache(report: CheckReport, cache: Any, want: dict[str, torch.Tensor], after: str) -> None:
    """cache (decoded) must hold want['k'], want['v'] (B, n_heads, t, hd)."""
    for key, other in (("k", "v"), ("v", "k")):
        got = _cache_tensor(cache, key, after)
        variants = partial(cache_variants, key, want[key], want[other])
        expect_match(report, got, want[key], f"{after}, cache[{key!r}] (B, n_heads, t, hd)", variants)


class _Sequence:
    """One sequence's inputs and its reference: full-forward outputs and per-head k, v."""

    def __init__(
        self,
        gen: torch.Generator,
        B: int,
        T: int,
        d: int,
        h: int,
        weights: tuple[torch.Tensor, torch.Tensor] | None = None,
    ) -> None:
        self.w_qkv, self.w_o = weights if weights is not None else random_attention_weights(gen, d)
        self.x = randn(gen, B, T, d)
        self.h = h
        x64, wq64, wo64 = self.x.double(), self.w_qkv.double(), self.w_o.double()
        self.y = causal_self_attention(x64, wq64, wo64, h).float()  # (B, T, d)
        self.kv = prefill_cache(x64, wq64, h)  # k, v (B, h, T, hd), float64

        # Which steps get a changed past, and the changed position's new key and value,
        # drawn now so that a seed fixes them: step i -> (position, k row, v row).
        self.changes: dict[int, tuple[int, torch.Tensor, torch.Tensor]] = {}
        for i in range(1, T):
            if float(torch.rand((), generator=gen)) < CHANGE_RATE:
                self.change(gen, i)
        rows = {row for row, _, _ in self.changes.values()}
        if T >= 3 and len(rows) < 2:
            # Two different positions changed at least once per sequence: a step that watches
            # one position for tampering meets a change it cannot see.
            last = T - 1
            other = next(r for r in range(last) if r not in rows)
            self.change(gen, last, row=other)

    def change(self, gen: torch.Generator, i: int, row: int | None = None) -> None:
        """Step i gets a past with one position changed (i >= 1): `row`, else a random one."""
        B, _, d = self.x.shape
        hd = d // self.h
        if row is None:
            row = int(torch.randint(0, i, (), generator=gen))
        self.changes[i] = (row, randn(gen, B, self.h, hd).double(), randn(gen, B, self.h, hd).double() * 3)

    def token(self, i: int) -> torch.Tensor:
        return self.x[:, i : i + 1]  # (B, 1, d)

    def cache_after(self, t: int) -> dict[str, torch.Tensor]:
        return {key: value[:, :, :t].float() for key, value in self.kv.items()}

    def past(self, i: int) -> dict[str, torch.Tensor]:
        """What the cache holds before step i, float32 as handed: the true past, or the changed one."""
        past = {key: value[:, :, :i].clone() for key, value in self.kv.items()}  # float64
        if i in self.changes:
            row, k_row, v_row = self.changes[i]
            past["k"][:, :, row], past["v"][:, :, row] = k_row, v_row
        return {key: value.float() for key, value in past.items()}

    def cache_after_step(self, i: int) -> dict[str, torch.Tensor]:
        """What the cache must hold after step i: the past it was handed plus the new key and value."""
        past = self.past(i)
        return {key: torch.cat([past[key], self.kv[key][:, :, i : i + 1].float()], dim=2) for key in past}

    def hand(self, session: SubmissionLink, cache: Handle, i: int) -> None:
        """Write the past of step i into the submission's cache (nothing before the first step)."""
        if i > 0:
            past = self.past(i)
            session.setitem(cache, "k", past["k"])
            session.setitem(cache, "v", past["v"])

    def call(self, session: SubmissionLink, i: int, cache: Handle) -> Any:
        return self.call_later(session, i, cache).value()

    def call_later(self, session: SubmissionLink, i: int, cache: Handle) -> Pending:
        """Step i with its past handed over, queued: it goes out with the next request."""
        self.hand(session, cache, i)
        return session.call_later(ENTRY_POINT, self.token(i), self.w_qkv, self.w_o, self.h, cache)

    def compare_step(
        self,
        got: Any,
        i: int,
        past: dict[str, torch.Tensor] | None = None,
        want: torch.Tensor | None = None,
        what: str = "",
    ) -> Comparison:
        """Step i's output against row i (or `want`, for a changed past (float64) `past`).

        A step whose past the grader changed (self.changes) is compared with the reference
        over that changed past, and an output that did not move at all is _IgnoredChange.
        """
        what = what or f"output of step {i + 1}"
        if want is None and past is None and i in self.changes:
            got = decode_tensor(got, what)
            row = self.changes[i][0]
            past = {key: value.double() for key, value in self.past(i).items()}
            want = reference_step(
                self.token(i).double(), self.w_qkv.double(), self.w_o.double(), self.h, dict(past)
            ).float()
            if close(got, self.y[:, i : i + 1]) and not close(want, self.y[:, i : i + 1]):
                raise _IgnoredChange(
                    f"the grader changed position {row} of cache['k'] and cache['v'] before step {i + 1}, "
                    f"and the step still returned the unchanged output. Likely cause: {GLOBAL_STATE}"
                )
            what += f" (the grader had changed cached position {row})"
        past64 = {key: value[:, :, :i] for key, value in self.kv.items()} if past is None else past

        def variants() -> list[Variant]:
            return step_variants(
                self.token(i).double(),
                past64["k"],
                past64["v"],
                self.w_qkv.double(),
                self.w_o.double(),
                self.h,
            )

        target = self.y[:, i : i + 1] if want is None else want
        return compare(got, target, what, variants)

    def expect_step(self, report: CheckReport, got: Any, i: int, **kwargs: Any) -> None:
        try:
            result = self.compare_step(got, i, **kwargs)
        except _IgnoredChange:
            report.diagnose(GLOBAL_STATE)
            raise
        if not result.ok:
            fail(report, result, result.matches[0] if result.matches else ())


def _run_steps(
    report: CheckReport, steps: Sequence[Callable[[], Callable[[], Comparison]]], hint: str = ""
) -> None:
    """Run every step even after a mismatch, so the mistake named fits all of them.

    Each step queues its call and hands back the comparison to make once the answer is in: every
    step of the test goes to the submission in one round trip, each with the cache the grader
    built for it, so batching tells a submission nothing a call alone would not.
    """
    comparisons = [queue_step() for queue_step in steps]
    evidence = Evidence()
    for compare_step in comparisons:
        try:
            evidence.add(compare_step())
        except _IgnoredChange:
            report.diagnose(GLOBAL_STATE)
            raise
        except (Mismatch, SubmissionError):
            if not evidence.failed:
                raise
            break  # report the first mismatch, not a later crash
    evidence.conclude(report, hint)


def _full_forward_test(
    session: SubmissionLink, report: CheckReport, gen: torch.Generator, B: int, T: int, d: int, h: int
) -> Callable[[], None]:
    seq = _Sequence(gen, B, T, d, h)

    def body() -> None:
        cache = session.new_dict()
        _run_steps(report, [partial(_one_step, session, seq, i, cache) for i in range(T)])

    return body


def _one_step(
    session: SubmissionLink, seq: _Sequence, i: int, cache: Handle, what: str = ""
) -> Callable[[], Comparison]:
    reply = seq.call_later(session, i, cache)
    return lambda: seq.compare_step(reply.value(), i, what=what)


def _cache_layout_test(
    session: SubmissionLink, report: CheckReport, gen: torch.Generator
) -> Callable[[], None]:
    B, T, d, h = CACHE_LAYOUT
    seq = _Sequence(gen, B, T, d, h)

    def body() -> None:
        cache = session.new_dict()
        for i in range(T):
            seq.call_later(session, i, cache)  # goes out with the get: one round trip per step
            expect_cache(report, session.get(cache), seq.cache_after_step(i), f"after step {i + 1}")

    return body


def _interleaved_test(
    session: SubmissionLink, report: CheckReport, gen: torch.Generator
) -> Callable[[], None]:
    n_seq, B, T, d, h = INTERLEAVED
    weights = random_attention_weights(gen, d)
    seqs = [_Sequence(gen, B, T, d, h, weights) for _ in range(n_seq)]

    def body() -> None:
        caches = [session.new_dict() for _ in seqs]
        steps = [
            partial(_one_step, session, seq, i, cache, f"sequence {n + 1}, output of step {i + 1}")
            for i in range(T)
            for n, (seq, cache) in enumerate(zip(seqs, caches, strict=True))
        ]
        _run_steps(report, steps, "each sequence has its own cache dict: keep no state between calls")

    return body


def _grader_built_test(
    session: SubmissionLink, report: CheckReport, gen: torch.Generator
) -> Callable[[], None]:
    B, P, d, h = GRADER_BUILT
    seq = _Sequence(gen, B, P + 1, d, h)

    def body() -> None:
        cache = session.new_dict()  # filled like every other call's (Sequence.hand)
        reply = seq.call_later(session, P, cache)
        with submission_context(
            f"given a cache the grader built: cache['k'] and cache['v'] of {P} tokens, "
            f"each (B, n_heads, t, hd) = {tuple(seq.cache_after(P)['k'].shape)}"
        ):
            after = session.get(cache)  # takes the step along: one round trip
            got = reply.value()
        seq.expect_step(report, got, P)
        expect_cache(report, after, seq.cache_after_step(P), f"after continuing a {P}-token cache")

    return body


def _corrupted_cache_test(
    session: SubmissionLink, report: CheckReport, gen: torch.Generator
) -> Callable[[], None]:
    """Like every other test, with one change guaranteed: the last step's past has a position changed."""
    B, P, d, h = CORRUPTED
    seq = _Sequence(gen, B, P + 1, d, h)
    seq.change(gen, P)

    def body() -> None:
        cache = session.new_dict()
        _run_steps(report, [partial(_one_step, session, seq, i, cache) for i in range(P + 1)])

    return body


def run(session: SubmissionLink, seed: int | None = None) -> CheckReport:
    gen = make_generator(seed)
    report = CheckReport()
    for B, T, d, h in SEQUENCES:
        name = f"matches full forward over {T} steps from an empty cache, B={B} d={d} h={h}"
        run_test(report, name, _full_forward_test(session, report, gen, B, T, d, h))
    B, T, d, h = CACHE_LAYOUT
    name = f"cache holds k and v as (B, n_heads, t, hd) after each step, B={B} d={d} h={h}"
    run_test(report, name, _cache_layout_test(session, report, gen))
    n_seq, B, T, d, h = INTERLEAVED
    name = f"{n_seq} sequences interleaved, each with its own cache, B={B} d={d} h={h}"
    run_test(report, name, _interleaved_test(session, report, gen))
    B, P, d, h = GRADER_BUILT
    name = f"continues a {P}-token cache the grader built, B={B} d={d} h={h}"
    run_test(report, name, _grader_built_test(session, report, gen))
    B, P, d, h = CORRUPTED
    name = f"reads the past from the cache: a changed cached row changes the output, B={B} d={d} h={h}"
    run_test(report, name, _corrupted_cache_test(session, report, gen))
    figure_test(report, decode_step_cost.NAME, lambda: decode_step_cost.figure(session, gen))
    return report

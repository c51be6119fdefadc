"""gqa-attention: `class GQA(torch.nn.Module)`, `GQA(d, n_q, n_kv)`, `forward(x, cache=None) -> (y, (k, v))`.

The grader builds the submission's module in its own process (a Handle here), loads a
random state dict (q.weight, kv.weight, o.weight, strict) and compares every output and
every returned cache with graders/reference/gqa.py: prefill, token-by-token decoding and
chunked prefill on top of a cache, for GQA, MHA (n_kv == n_q) and MQA (n_kv == 1). The
probes hand it a cache the grader built, change a cached row, and change future tokens.

Every call with a cache is a possible probe: the cache passed in is always the grader's
own (the reference's, never the one the module returned, so "is this what I returned?"
tells a submission nothing), and about one call in three, in every test, at a random
position, it has one cached position changed; the output is then compared with the
reference over exactly that cache. A module that reads the cache only when a call looks
like a probe cannot tell which calls are probes without reading the cache.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import torch

from graders.checks import gqa_attention_cost
from graders.checks.attention_common import (
    decode_tensor,
    describe,
    expect_match,
    make_generator,
    raised,
    randn,
    submission_context,
)
from graders.checks.gqa_attention_mistakes import (  # noqa: F401 - names the tests and the diagnosis use
    CACHE_AFTER_REPEAT,
    CACHE_BTHD,
    CACHE_IGNORED,
    CACHE_NOT_APPENDED,
    CACHE_SWAPPED,
    KEPT_STATE,
    KNOWN_MISTAKES,
    KV_SPLIT,
    MASK_NOT_OFFSET,
    REPEAT_TILED,
    KVSplit,
    Repeat,
    cache_variants,
    gqa_variant,
    output_variants,
)
from graders.checks.report import CheckReport, Mismatch, close, run_test
from graders.checks.serving_common import figure_test
from graders.reference.gqa import GQA, KVCache
from graders.sandbox.protocol import Handle, Pending, SubmissionError, SubmissionLink

SLUG = "gqa-attention"
ENTRY_POINT = "GQA"

# (B, d, n_q, n_kv): two GQA shapes, MHA (n_kv == n_q) and MQA (n_kv == 1); no d == hd**2.
CONFIGS = [(2, 96, 8, 2), (3, 48, 6, 3), (2, 32, 4, 4), (2, 32, 4, 1)]
PREFILL_T = 6
DECODE_PROMPT, DECODE_STEPS = 4, 3
CHUNKS = (3, 4, 2)  # chunked prefill: the first chunk on an empty cache, the rest on top of it
GRADER_CACHE = (5, 2)  # cached positions, new positions
CAUSALITY_T, CAUSALITY_FROM = 8, 5
CORRUPT_PROMPT = 4
CHANGE_RATE = 1 / 3  # the share of calls with a cache, in every test, whose cache has a position changed


def unpack(result: Any) -> tuple[Any, tuple[torch.Tensor, torch.Tensor]]:
    """forward's result -> (y, (k, v)), or Mismatch saying what came back instead."""
    if not isinstance(result, tuple | list) or len(result) != 2:
        raise Mismatch(f"forward returned {describe(result)}, expected a pair (y, (k, v))")
    y, cache = result
    if not isinstance(cache, tuple | list) or len(cache) != 2:
        raise Mismatch(f"the cache forward returned is {describe(cache)}, expected a pair (k, v) of tensors")
    return y, (decode_tensor(cache[0], "the returned k"), decode_tensor(cache[1], "the returned v"))


_NOT_A_MODULE = "GQA has no load_state_dict: it should subclass torch.nn.Module"


class _Layer:
    """One configuration: random weights, the reference module, and the submission's module."""

    def __init__(self, gen: torch.Generator, B: int, d: int, n_q: int, n_kv: int) -> None:
        self.B, self.d, self.n_q, self.n_kv = B, d, n_q, n_kv
        self.hd = d // n_q
        self.state = {
            "q.weight": randn(gen, d, d, scale=d**-0.5),
            "kv.weight": randn(gen, 2 * n_kv * self.hd, d, scale=d**-0.5),
            "o.weight": randn(gen, d, d, scale=d**-0.5),
        }
        self.w64 = {key: value.double() for key, value in self.state.items()}
        self.ref = GQA(d, n_q, n_kv).double()
        self.ref.load_state_dict(self.w64)
        self._built: Handle | Mismatch | None = None
        self._loading: Pending | None = None  # load_state_dict, queued with the first test's calls
        self._answers: dict[tuple[Any, ...], tuple[torch.Tensor, KVCache]] = {}

    @property
    def kind(self) -> str:
        return "MHA" if self.n_kv == self.n_q else "MQA" if self.n_kv == 1 else "GQA"

    def label(self, T: int | None = None) -> str:
        t = "" if T is None else f" T={T}"
        return f"{self.kind} B={self.B}{t} d={self.d} n_q={self.n_q} n_kv={self.n_kv}"

    def tokens(self, gen: torch.Generator, T: int) -> torch.Tensor:
        return randn(gen, self.B, T, self.d)

    def build(self, session: SubmissionLink) -> Handle:
        """The submission's module with our weights, built once per configuration (a failure too)."""
        if self._built is None:
            try:
                self._built = self._build(session)
            except Mismatch as exc:
                self._built = exc
        if isinstance(self._built, Mismatch):
            raise Mismatch(str(self._built))
        return self._built

    def _build(self, session: SubmissionLink) -> Handle:
        with submission_context(f"while building GQA({self.d}, {self.n_q}, {self.n_kv})"):
            module = session.call(ENTRY_POINT, self.d, self.n_q, self.n_kv, keep=True)
        try:  # answered with the first forward's round trip, checked before its answer
            self._loading = session.call_later(module.load_state_dict, self.state)
        except AttributeError:  # the in-process session looks the attribute up on our side
            raise Mismatch(_NOT_A_MODULE) from None
        return module

    def _loaded(self) -> None:
        """Raise (and keep, for the later tests) the failure of the queued load_state_dict."""
        loading, self._loading = self._loading, None
        if loading is None:
            return
        try:
            loading.value()
        except SubmissionError as exc:
            if exc.type_name == "AttributeError" and "load_state_dict" in exc.message:
                self._built = Mismatch(_NOT_A_MODULE)  # the sandbox looks it up in the submission's process
            else:
                shapes = ", ".join(f"{key} {tuple(value.shape)}" for key, value in self.state.items())
                self._built = raised(exc, f"while loading a state dict with {shapes}, strict")
            raise Mismatch(str(self._built)) from None

    def reference(self, x: torch.Tensor, cache: KVCache | None = None) -> tuple[torch.Tensor, KVCache]:
        """float64 truth for float32 inputs, computed once per distinct (x, cache): a call on a
        changed cache asks for the same answer up to four times (y, the KEPT_STATE probe, the
        returned cache), and each chunk's check the one its test drew."""
        key = tuple(
            None if t is None else (t.dtype, t.shape, t.numpy().tobytes()) for t in (x, *(cache or ()))
        )
        if key not in self._answers:
            cache64 = None if cache is None else (cache[0].double(), cache[1].double())
            with torch.no_grad():
                self._answers[key] = self.ref(x.double(), cache64)
        return self._answers[key]

    def forward(
        self,
        session: SubmissionLink,
        module: Handle,
        x: torch.Tensor,
        cache: KVCache | None = None,
        hint: str = "",
    ) -> tuple[Any, tuple[torch.Tensor, torch.Tensor]]:
        """module(x) or module(x, cache); the submission's exception gets a hint about the call."""
        return self.forward_later(session, module, x, cache, hint)()

    def forward_later(
        self,
        session: SubmissionLink,
        module: Handle,
        x: torch.Tensor,
        cache: KVCache | None = None,
        hint: str = "",
    ) -> Callable[[], tuple[Any, tuple[torch.Tensor, torch.Tensor]]]:
        """forward, queued (SubmissionLink.call_later): a test queues all its calls, which go out
        in one round trip (every cache passed in is the grader's, so none waits for an answer);
        the thunk returns what forward returned, or raises what it raised, with the hint."""
        if cache is None:
            hint = hint or f"calling forward(x) with x {tuple(x.shape)}"
            pending = session.call_later(module, x)
        else:
            hint = hint or (
                f"calling forward(x, cache) with x {tuple(x.shape)} and a cache k {tuple(cache[0].shape)}"
            )
            pending = session.call_later(module, x, cache)

        def answer() -> tuple[Any, tuple[torch.Tensor, torch.Tensor]]:
            self._loaded()
            with submission_context(hint):
                return unpack(pending.value())

        return answer

    def expect_output(
        self, report: CheckReport, got: Any, x: torch.Tensor, cache: KVCache | None, what: str
    ) -> None:
        """got must equal the reference y for x on top of cache (both as the submission received them)."""
        cache64 = None if cache is None else (cache[0].double(), cache[1].double())
        want = self.reference(x, cache)[0].float()
        expect_match(
            report,
            got,
            want,
            what,
            lambda: output_variants(self.w64, x.double(), cache64, self.n_q, self.n_kv),
        )

    def expect_cache(self, report: CheckReport, got: KVCache, want: KVCache, new: int, what: str) -> None:
        """got (k, v) must be want's (B, n_kv, S, hd); `new` positions came from this call."""
        for i, name in enumerate(("k", "v")):
            right, other = want[i].float(), want[1 - i].float()
            expect_match(
                report,
                got[i],
                right,
                f"{what}, the returned {name} (B, n_kv, S, hd)",
                partial(cache_variants, right, other, self.n_q, new),
            )


@dataclass(frozen=True)
class _Change:
    """One cached position the grader overwrites before a call: k and v rows (B, n_kv, hd)."""

    row: int
    k: torch.Tensor
    v: torch.Tensor


def _draw_change(gen: torch.Generator, layer: _Layer, S: int, *, always: bool = False) -> _Change | None:
    """A change of one of S cached positions, for about CHANGE_RATE of the calls (or always)."""
    if not always and float(torch.rand((), generator=gen)) >= CHANGE_RATE:
        return None
    row = int(torch.randint(0, S, (), generator=gen))
    shape = (layer.B, layer.n_kv, layer.hd)
    return _Change(row, randn(gen, *shape), randn(gen, *shape, scale=3.0))


def _hand(past: KVCache, change: _Change | None) -> KVCache:
    """The cache the grader passes in: the true past as float32, with the change written in."""
    k, v = past[0].float().clone(), past[1].float().clone()
    if change is not None:
        k[:, :, change.row], v[:, :, change.row] = change.k, change.v
    return k, v


Reply = Callable[[], tuple[Any, tuple[torch.Tensor, torch.Tensor]]]


def _queue_on_cache(
    session: SubmissionLink,
    layer: _Layer,
    module: Handle,
    x: torch.Tensor,
    past: KVCache,
    change: _Change | None,
) -> tuple[KVCache, Reply]:
    """forward(x, cache) queued with the grader's cache (the true `past`, maybe changed): the
    cache handed in, and the call's answer."""
    handed = _hand(past, change)
    return handed, layer.forward_later(session, module, x, handed)


def _check_on_cache(
    report: CheckReport,
    layer: _Layer,
    x: torch.Tensor,
    past: KVCache,
    change: _Change | None,
    handed: KVCache,
    reply: Reply,
    what: str,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Checks y of a call queued by _queue_on_cache; returns the cache the module returned."""
    y, returned = reply()
    if change is not None:
        what += f" (the grader had changed cached position {change.row})"
        got, right = decode_tensor(y, "y"), layer.reference(x, handed)[0].float()
        # Only a wrong y can be the unchanged cache's: the probe's reference is computed then.
        unchanged = None if close(got, right) else layer.reference(x, _hand(past, None))[0].float()
        if unchanged is not None and close(got, unchanged) and not close(right, unchanged):
            report.diagnose(KEPT_STATE)
            raise Mismatch(
                f"after the grader changed position {change.row} of the cache it passed in, "
                f"y was unchanged. Likely cause: {KEPT_STATE}"
            )
    layer.expect_output(report, y, x, handed, what)
    return returned


def _prefill_test(
    session: SubmissionLink, report: CheckReport, layer: _Layer, gen: torch.Generator
) -> Callable[[], None]:
    x = layer.tokens(gen, PREFILL_T)

    def body() -> None:
        module = layer.build(session)
        y, _ = layer.forward(session, module, x)
        layer.expect_output(report, y, x, None, "y")

    return body


def _cache_test(
    session: SubmissionLink, report: CheckReport, layer: _Layer, gen: torch.Generator
) -> Callable[[], None]:
    x = layer.tokens(gen, PREFILL_T + 1)
    _, want_prefill = layer.reference(x[:, :PREFILL_T])
    change = _draw_change(gen, layer, PREFILL_T)

    def body() -> None:
        module = layer.build(session)
        step = x[:, PREFILL_T:]
        prefill = layer.forward_later(session, module, x[:, :PREFILL_T])
        handed, reply = _queue_on_cache(session, layer, module, step, want_prefill, change)
        _, cache = prefill()
        layer.expect_cache(report, cache, want_prefill, PREFILL_T, f"after a {PREFILL_T}-token prefill")
        cache = _check_on_cache(report, layer, step, want_prefill, change, handed, reply, "y")
        layer.expect_cache(report, cache, layer.reference(step, handed)[1], 1, "after one more token")

    return body


def _chunks_test(
    session: SubmissionLink, report: CheckReport, layer: _Layer, gen: torch.Generator, chunks: Sequence[int]
) -> Callable[[], None]:
    """Feed x in chunks, passing back the returned cache; every output row must match the full pass."""
    ends = list(itertools.accumulate(chunks))
    x = layer.tokens(gen, ends[-1])
    # The right cache after each chunk, what the grader passes in with the next one: the first
    # positions of the whole prompt's (a position's k and v depend on its own token only).
    _, (k, v) = layer.reference(x)
    true_caches = [(k[:, :, :end], v[:, :, :end]) for end in ends]
    changes = [None] + [_draw_change(gen, layer, end) for end in ends[:-1]]

    def body() -> None:
        module = layer.build(session)
        starts = [end - size for size, end in zip(chunks, ends, strict=True)]
        first = layer.forward_later(session, module, x[:, : ends[0]])
        queued = [  # every chunk's call goes out with the first answer asked for
            _queue_on_cache(session, layer, module, x[:, start:end], true_caches[i], changes[i + 1])
            for i, (start, end) in enumerate(zip(starts[1:], ends[1:], strict=True))
        ]
        for i, (size, end) in enumerate(zip(chunks, ends, strict=True)):
            start = starts[i]
            chunk = x[:, start:end]
            what = f"y for positions {start}..{end - 1}"
            if i == 0:
                y, cache = first()
                layer.expect_output(report, y, chunk, None, what)
                want = true_caches[0]
            else:
                what += f" on top of a {start}-position cache"
                handed, reply = queued[i - 1]
                cache = _check_on_cache(
                    report, layer, chunk, true_caches[i - 1], changes[i], handed, reply, what
                )
                want = true_caches[i] if changes[i] is None else layer.reference(chunk, handed)[1]
            layer.expect_cache(report, cache, want, size, f"after {end} positions")

    return body


def _grader_cache_test(
    session: SubmissionLink, report: CheckReport, layer: _Layer, gen: torch.Generator
) -> Callable[[], None]:
    P, T = GRADER_CACHE
    cache = (randn(gen, layer.B, layer.n_kv, P, layer.hd), randn(gen, layer.B, layer.n_kv, P, layer.hd))
    x = layer.tokens(gen, T)
    _, want_cache = layer.reference(x, cache)

    def body() -> None:
        module = layer.build(session)
        hint = f"given a cache the grader built: (k, v), each (B, n_kv, {P}, hd) = {tuple(cache[0].shape)}"
        y, new_cache = layer.forward(session, module, x, cache, hint)
        layer.expect_output(report, y, x, cache, f"y for {T} new positions on a {P}-position cache")
        layer.expect_cache(
            report, new_cache, want_cache, T, f"after {T} new positions on a {P}-position cache"
        )

    return body


def _corrupted_cache_test(
    session: SubmissionLink, report: CheckReport, layer: _Layer, gen: torch.Generator
) -> Callable[[], None]:
    """Like every call on a cache, with the change guaranteed (at a random position)."""
    P = CORRUPT_PROMPT
    x = layer.tokens(gen, P + 1)
    _, past = layer.reference(x[:, :P])
    change = _draw_change(gen, layer, P, always=True)

    def body() -> None:
        module = layer.build(session)
        prefill = layer.forward_later(session, module, x[:, :P])
        handed, reply = _queue_on_cache(session, layer, module, x[:, P:], past, change)
        prefill()
        _check_on_cache(report, layer, x[:, P:], past, change, handed, reply, "y on the changed cache")

    return body


def _causality_test(session: SubmissionLink, layer: _Layer, gen: torch.Generator) -> Callable[[], None]:
    T, j = CAUSALITY_T, CAUSALITY_FROM
    x = layer.tokens(gen, T)
    changed = x.clone()
    changed[:, j:] = layer.tokens(gen, T - j)

    def body() -> None:
        module = layer.build(session)
        first, second = layer.forward_later(session, module, x), layer.forward_later(session, module, changed)
        before, after = decode_tensor(first()[0], "y"), decode_tensor(second()[0], "y")
        if before.shape != (layer.B, T, layer.d) or after.shape != before.shape:
            raise Mismatch(f"y has shape {tuple(before.shape)}, expected {(layer.B, T, layer.d)}")
        for pos in range(j):
            if not close(after[:, pos], before[:, pos]):
                raise Mismatch(
                    f"changing tokens {j}..{T - 1} changed y at position {pos}: "
                    f"position i may only see tokens 0..i"
                )

    return body


def run(session: SubmissionLink, seed: int | None = None) -> CheckReport:
    gen = make_generator(seed)
    report = CheckReport()
    layers = [_Layer(gen, *config) for config in CONFIGS]
    for layer in layers:
        run_test(
            report,
            f"prefill matches reference, {layer.label(PREFILL_T)}",
            _prefill_test(session, report, layer, gen),
        )
        run_test(
            report,
            f"returned cache is (k, v) with n_kv heads, (B, n_kv, S, hd), {layer.label()}",
            _cache_test(session, report, layer, gen),
        )
        decode = (DECODE_PROMPT,) + (1,) * DECODE_STEPS
        run_test(
            report,
            f"cached decoding matches full forward token for token ({DECODE_STEPS} steps), {layer.label()}",
            _chunks_test(session, report, layer, gen, decode),
        )
        run_test(
            report,
            f"chunked prefill on top of a cache ({'+'.join(map(str, CHUNKS))}), {layer.label()}",
            _chunks_test(session, report, layer, gen, CHUNKS),
        )
    gqa = layers[0]
    P, T = GRADER_CACHE
    run_test(
        report,
        f"continues a {P}-position cache the grader built, {gqa.label(T)}",
        _grader_cache_test(session, report, gqa, gen),
    )
    run_test(
        report,
        f"reads the past from the cache: a changed cached row changes y, {gqa.label()}",
        _corrupted_cache_test(session, report, gqa, gen),
    )
    run_test(
        report,
        f"causal: changing tokens {CAUSALITY_FROM}.. leaves earlier outputs alone, {gqa.label(CAUSALITY_T)}",
        _causality_test(session, gqa, gen),
    )
    cost_layer = _Layer(gen, gqa_attention_cost.COST[0], *gqa_attention_cost.COST[2:])
    figure_test(
        report, gqa_attention_cost.name(), lambda: gqa_attention_cost.figure(session, cost_layer, gen)
    )
    return report

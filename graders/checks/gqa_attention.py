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
The layer each test builds and calls is gqa_attention_layer.py; the mistakes it names are
gqa_attention_mistakes.py.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from graders.checks import gqa_attention_cost
from graders.checks.attention_common import (
    decode_tensor,
    make_generator,
    randn,
)
from graders.checks.gqa_attention_layer import ENTRY_POINT, Layer, unpack
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
from graders.reference.gqa import KVCache
from graders.sandbox.protocol import Handle, SubmissionLink

SLUG = "gqa-attention"
__all__ = ["CONFIGS", "ENTRY_POINT", "KNOWN_MISTAKES", "SLUG", "run", "unpack"]

# (B, d, n_q, n_kv): two GQA shapes, MHA (n_kv == n_q) and MQA (n_kv == 1); no d == hd**2.
CONFIGS = [(2, 96, 8, 2), (3, 48, 6, 3), (2, 32, 4, 4), (2, 32, 4, 1)]
PREFILL_T = 6
DECODE_PROMPT, DECODE_STEPS = 4, 3
CHUNKS = (3, 4, 2)  # chunked prefill: the first chunk on an empty cache, the rest on top of it
GRADER_CACHE = (5, 2)  # cached positions, new positions
CAUSALITY_T, CAUSALITY_FROM = 8, 5
CORRUPT_PROMPT = 4
CHANGE_RATE = 1 / 3  # the share of calls with a cache, in every test, whose cache has a position changed


@dataclass(frozen=True)
class _Change:
    """One cached position the grader overwrites before a call: k and v rows (B, n_kv, hd)."""

    row: int
    k: torch.Tensor
    v: torch.Tensor


def _draw_change(gen: torch.Generator, layer: Layer, S: int, *, always: bool = False) -> _Change | None:
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
    layer: Layer,
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
    layer: Layer,
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
    session: SubmissionLink, report: CheckReport, layer: Layer, gen: torch.Generator
) -> Callable[[], None]:
    x = layer.tokens(gen, PREFILL_T)

    def body() -> None:
        module = layer.build(session)
        y, _ = layer.forward(session, module, x)
        layer.expect_output(report, y, x, None, "y")

    return body


def _cache_test(
    session: SubmissionLink, report: CheckReport, layer: Layer, gen: torch.Generator
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
    session: SubmissionLink, report: CheckReport, layer: Layer, gen: torch.Generator, chunks: Sequence[int]
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
    session: SubmissionLink, report: CheckReport, layer: Layer, gen: torch.Generator
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
    session: SubmissionLink, report: CheckReport, layer: Layer, gen: torch.Generator
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


def _causality_test(session: SubmissionLink, layer: Layer, gen: torch.Generator) -> Callable[[], None]:
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
    layers = [Layer(gen, *config) for config in CONFIGS]
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
    cost_layer = Layer(gen, gqa_attention_cost.COST[0], *gqa_attention_cost.COST[2:])
    figure_test(
        report, gqa_attention_cost.name(), lambda: gqa_attention_cost.figure(session, cost_layer, gen)
    )
    return report

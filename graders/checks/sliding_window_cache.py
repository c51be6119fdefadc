"""sliding-window-cache: `SlidingWindowCache(window, n_sink, batch, n_heads, head_dim, dtype)`.

Scripts of updates (one token at a time past the window, chunks that wrap in the middle, a
prefill longer than the window) are replayed on the submission's cache, on
graders/reference/sliding_window.py's and on known-wrong variants of it. Every call's
kept keys, values and positions are compared; the first that differs fails the test, and
a variant that agreed with the submission on every call so far, and on this one, names the
mistake.

"Storage that never grows or moves" is measured after construction and after *every*
update: the tensor storages the cache object holds (graders/sandbox/footprint.py) must be
allocated for exactly n_sink + window positions (keys and values) and keep the same
addresses and sizes for the cache's life.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

import torch

from graders.checks import sliding_window_cost
from graders.checks.attention_common import decode_tensor, describe, make_generator, randn, submission_context
from graders.checks.report import CheckReport, Mismatch, close, explain_difference, run_test
from graders.checks.serving_common import figure_test
from graders.reference.sliding_window import SlidingWindowCache, kept_positions
from graders.sandbox.protocol import Handle, SubmissionLink

SLUG = "sliding-window-cache"
ENTRY_POINT = "SlidingWindowCache"

SINKS_OVERWRITTEN = (
    "the sinks are overwritten once the buffer wraps: the first n_sink tokens stay in their slots for the "
    "cache's life, and only the other `window` slots roll"
)
SINKS_IGNORED = "n_sink is ignored: the first n_sink tokens ever seen must be kept besides the window"
STORAGE_ORDER = (
    "after wrapping, the kept tokens come back in slot order, not position order: the oldest window token "
    "sits at slot n_sink + (seen - window - n_sink) % window"
)
WINDOW_PLUS_ONE = "off by one: the cache keeps window + 1 recent tokens instead of window"
WINDOW_MINUS_ONE = "off by one: the cache keeps window - 1 recent tokens instead of window"
KEEPS_CHUNK_START = (
    "from a chunk longer than the window the cache keeps its first tokens: it must keep the last `window` "
    "(and the sinks)"
)
POSITIONS_RELATIVE = (
    "positions are counted within the cache (0 .. K-1): return each kept token's absolute position"
)
DTYPE_IGNORED = "the dtype argument is ignored: allocate the storage with the dtype passed in"
STORAGE_GROWS = "the storage grows"
STORAGE_MOVES = "the storage moves"
NOT_PREALLOCATED = (
    "the storage is not allocated for exactly n_sink + window positions when the cache is built"
)
SHARED_STORAGE = (
    "two caches share one storage (a class attribute or a module-level buffer): each cache owns its own"
)
KNOWN_MISTAKES = (
    SINKS_OVERWRITTEN,
    SINKS_IGNORED,
    STORAGE_ORDER,
    WINDOW_PLUS_ONE,
    WINDOW_MINUS_ONE,
    KEEPS_CHUNK_START,
    POSITIONS_RELATIVE,
    DTYPE_IGNORED,
    STORAGE_GROWS,
    STORAGE_MOVES,
    NOT_PREALLOCATED,
    SHARED_STORAGE,
)

Result = tuple[torch.Tensor, torch.Tensor, torch.Tensor]

# --- known-wrong variants of the reference, replayed beside it --------------------------------------


class _StorageOrder(SlidingWindowCache):
    def update(self, k: torch.Tensor, v: torch.Tensor) -> Result:
        _, _, positions = super().update(k, v)
        K = positions.shape[0]
        return self.k[:, :, :K], self.v[:, :, :K], positions


class _PositionsRelative(SlidingWindowCache):
    def update(self, k: torch.Tensor, v: torch.Tensor) -> Result:
        keys, values, positions = super().update(k, v)
        return keys, values, torch.arange(positions.shape[0])


class _KeepsChunkStart(SlidingWindowCache):
    """Of a chunk longer than the room left, the first tokens that fit are written."""

    def update(self, k: torch.Tensor, v: torch.Tensor) -> Result:
        n = k.shape[-2]
        positions = torch.arange(self.seen, self.seen + n)
        room = self.n_sink - min(self.seen, self.n_sink) + self.window
        self.seen += n
        keep = torch.arange(n) < room
        slots = self.slot(positions[keep])
        self.k[:, :, slots], self.v[:, :, slots] = k[:, :, keep], v[:, :, keep]
        kept = kept_positions(self.seen, self.window, self.n_sink)
        order = self.slot(kept)
        return self.k[:, :, order], self.v[:, :, order], kept


def _variants(window: int, n_sink: int, dims: tuple[int, int, int], dtype: torch.dtype) -> dict[str, Any]:
    B, H, hd = dims
    out: dict[str, Any] = {
        SINKS_OVERWRITTEN: SlidingWindowCache(window + n_sink, 0, B, H, hd, dtype),
        STORAGE_ORDER: _StorageOrder(window, n_sink, B, H, hd, dtype),
        WINDOW_PLUS_ONE: SlidingWindowCache(window + 1, n_sink, B, H, hd, dtype),
        KEEPS_CHUNK_START: _KeepsChunkStart(window, n_sink, B, H, hd, dtype),
        POSITIONS_RELATIVE: _PositionsRelative(window, n_sink, B, H, hd, dtype),
    }
    if n_sink > 0:
        out[SINKS_IGNORED] = SlidingWindowCache(window, 0, B, H, hd, dtype)
    if window > 1:
        out[WINDOW_MINUS_ONE] = SlidingWindowCache(window - 1, n_sink, B, H, hd, dtype)
    return out


# --- driving the submission -----------------------------------------------------------------------


def _decode_result(value: Any, what: str) -> Result:
    if not isinstance(value, tuple | list) or len(value) != 3:
        raise Mismatch(f"{what} should return (k_kept, v_kept, positions), got {describe(value)}")
    keys = decode_tensor(value[0], f"{what}'s k_kept")
    values = decode_tensor(value[1], f"{what}'s v_kept")
    positions = decode_tensor(value[2], f"{what}'s positions")
    return keys, values, positions


def _same(got: Result, want: Result) -> bool:
    return (
        close(got[0], want[0])
        and close(got[1], want[1])
        and got[2].shape == want[2].shape
        and not got[2].is_floating_point()
        and bool(torch.equal(got[2].long(), want[2]))
    )


def _explain(got: Result, want: Result, what: str) -> str:
    for i, name in ((2, "positions"), (0, "k_kept"), (1, "v_kept")):
        g, w = got[i], want[i]
        if i == 2:
            if g.is_floating_point():
                return f"{what}'s positions have dtype {g.dtype}: return a LongTensor of absolute positions"
            if g.shape != w.shape or not torch.equal(g.long(), w):
                return f"{what}'s positions are {g.tolist()}, expected {w.tolist()}"
        elif not close(g, w):
            return explain_difference(g, w, f"{what}'s {name} (B, H, K, hd)")
    return f"{what} differs"


class _Replay:
    """The submission's cache, the reference and the variants, fed the same updates."""

    def __init__(
        self,
        session: SubmissionLink,
        report: CheckReport,
        gen: torch.Generator,
        window: int,
        n_sink: int,
        dims: tuple[int, int, int],
        dtype: torch.dtype | None = None,
    ) -> None:
        self.session, self.report, self.gen = session, report, gen
        self.window, self.n_sink, self.dims = window, n_sink, dims
        self.dtype = dtype or torch.float32
        B, H, hd = dims
        self.reference = SlidingWindowCache(window, n_sink, B, H, hd, self.dtype)
        self.history: list[tuple[torch.Tensor, torch.Tensor, Result]] = []  # (k, v, what came back)
        kwargs: dict[str, Any] = {} if dtype is None else {"dtype": dtype}
        with submission_context(f"SlidingWindowCache({window}, {n_sink}, {B}, {H}, {hd})"):
            self.handle: Handle = session.call(ENTRY_POINT, window, n_sink, B, H, hd, keep=True, **kwargs)
        self.storage = session.storages(self.handle)
        itemsize = torch.empty((), dtype=self.dtype).element_size()
        self.needed = 2 * B * H * (n_sink + window) * hd * itemsize
        self.calls = 0

    def check_allocation(self) -> None:
        total = sum(n for _, n in self.storage)
        slack = 16 * (self.n_sink + self.window) + 64  # room for a positions tensor or a counter
        if not self.needed <= total <= self.needed + slack:
            self.report.diagnose(NOT_PREALLOCATED)
            raise Mismatch(
                f"right after construction the cache holds {total:,} bytes of tensors, but keys and values "
                "for "
                f"n_sink + window = {self.n_sink + self.window} positions need {self.needed:,}. "
                f"Likely cause: {NOT_PREALLOCATED}"
            )

    def check_dtype(self) -> None:
        """A float64 cache whose storage is half the size it needs was allocated in float32."""
        total = sum(n for _, n in self.storage)
        if self.dtype == torch.float64 and self.needed // 2 <= total < self.needed * 3 // 4:
            self.report.diagnose(DTYPE_IGNORED)
            raise Mismatch(
                f"asked for dtype=torch.float64, the cache holds {total:,} bytes of tensors: half of the "
                f"{self.needed:,} that n_sink + window float64 positions need. Likely cause: {DTYPE_IGNORED}"
            )

    def check_storage(self, what: str, now: list[tuple[int, int]]) -> None:
        if now == self.storage:
            return
        if sum(n for _, n in self.storage) < self.needed:
            self.check_allocation()
        grows = sum(n for _, n in now) > sum(n for _, n in self.storage)
        mistake = STORAGE_GROWS if grows else STORAGE_MOVES
        self.report.diagnose(mistake)
        raise Mismatch(
            f"after {what} the cache's tensors are {len(now)} storages of {sum(n for _, n in now):,} bytes "
            "at "
            f"other addresses than the {len(self.storage)} of {sum(n for _, n in self.storage):,} bytes it "
            f"allocated: {mistake}; write into the preallocated storage in place (index or slice assignment, "
            "copy_), never torch.cat or a new tensor"
        )

    def update(self, n: int) -> None:
        B, H, hd = self.dims
        k, v = randn(self.gen, B, H, n, hd).to(self.dtype), randn(self.gen, B, H, n, hd).to(self.dtype)
        self.calls += 1
        start = self.reference.seen
        what = f"update {self.calls} (tokens {start}..{start + n - 1})"
        want = self.reference.update(k, v)
        with submission_context(f"{what}, k and v {tuple(k.shape)}"):
            reply, now = self.session.call_and_storages(self.handle.update, k, v, of=self.handle)
            got = _decode_result(reply, what)
        self.history.append((k, v, got))
        if got[0].dtype != self.dtype and self.dtype != torch.float32:
            self.report.diagnose(DTYPE_IGNORED)
            raise Mismatch(
                f"{what}'s k_kept has dtype {got[0].dtype}, expected {self.dtype}: {DTYPE_IGNORED}"
            )
        if not _same(got, want):
            message = _explain(got, want, what)
            mistake = self.matching_mistake()
            if mistake:
                self.report.diagnose(mistake)
                message += f". Likely cause: {mistake}"
            raise Mismatch(message)
        self.check_storage(what, now)

    def matching_mistake(self) -> str | None:
        """The first variant that, replayed from the start, gave what the submission gave every time."""
        for name, cache in _variants(self.window, self.n_sink, self.dims, self.dtype).items():
            if all(_same(got, cache.update(k, v)) for k, v, got in self.history):
                return name
        return None


def _script_test(
    session: SubmissionLink,
    report: CheckReport,
    gen: torch.Generator,
    window: int,
    n_sink: int,
    dims: tuple[int, int, int],
    chunks: Sequence[int],
    dtype: torch.dtype | None = None,
) -> Callable[[], None]:
    def body() -> None:
        replay = _Replay(session, report, gen, window, n_sink, dims, dtype)
        replay.check_dtype()
        for n in chunks:
            replay.update(n)
        replay.check_allocation()  # after the values, so a window off by one is named as such

    return body


def _two_caches_test(
    session: SubmissionLink, report: CheckReport, gen: torch.Generator
) -> Callable[[], None]:
    def body() -> None:
        first = _Replay(session, report, gen, 3, 1, (1, 2, 4))
        second = _Replay(session, report, gen, 3, 1, (1, 2, 4))
        ptrs = {p for p, _ in first.storage} & {p for p, _ in second.storage}
        if ptrs:
            report.diagnose(SHARED_STORAGE)
            raise Mismatch(
                f"two caches built one after the other hold the same storage. Likely cause: {SHARED_STORAGE}"
            )
        for n in (2, 1, 3, 1, 1):
            first.update(n)
            second.update(n)

    return body


def run(session: SubmissionLink, seed: int | None = None) -> CheckReport:
    gen = make_generator(seed)
    rng = random.Random(int(torch.randint(0, 2**31, (1,), generator=gen)))
    report = CheckReport()
    window = rng.randrange(4, 7)
    run_test(
        report,
        f"a rolling buffer (n_sink=0, window={window}): one token at a time, well past the window, "
        "B=2 H=3 hd=8",
        _script_test(session, report, gen, window, 0, (2, 3, 8), [1] * (window + 5)),
    )
    window, n_sink = rng.randrange(3, 5), rng.randrange(2, 4)
    run_test(
        report,
        f"attention sinks kept through wrap-around: n_sink={n_sink}, window={window}, single tokens, B=2 H=2",
        _script_test(session, report, gen, window, n_sink, (2, 2, 4), [1] * (n_sink + 2 * window + 1)),
    )
    window, n_sink = rng.randrange(5, 8), 3
    first = window + n_sink + rng.randrange(2, 5)
    run_test(
        report,
        f"a prefill of {first} tokens, longer than n_sink + window = {n_sink + window}, then decoding, "
        "B=1 H=2",
        _script_test(session, report, gen, window, n_sink, (1, 2, 6), [first, 1, 1, window + 1, 1]),
    )
    window = rng.randrange(6, 9)
    chunks = [rng.randrange(3, 6), rng.randrange(3, 6), rng.randrange(4, 8), rng.randrange(2, 4)]
    run_test(
        report,
        f"chunks of {', '.join(map(str, chunks))} wrapping in the middle, n_sink=1, window={window}, B=3 H=1",
        _script_test(session, report, gen, window, 1, (3, 1, 8), chunks),
    )
    run_test(
        report,
        "dtype=torch.float64 is honoured: the storage and the kept keys and values are float64, B=2 H=2",
        _script_test(session, report, gen, 4, 1, (2, 2, 4), [3, 1, 4, 1], dtype=torch.float64),
    )
    run_test(
        report,
        "two caches at once each keep their own tokens in their own storage",
        _two_caches_test(session, report, gen),
    )
    figure_test(report, sliding_window_cost.NAME, lambda: sliding_window_cost.figure(session, gen))
    return report

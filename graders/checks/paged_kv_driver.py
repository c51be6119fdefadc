"""The paged-kv-cache battery's driver: one submission cache and the reference, fed the same calls.

Which physical block a cache hands out is its own business, so the driver compares only what
the contract fixes: num_free_blocks() after every call, block-table lengths, the tables a fork
shares, gather, and the submission's own k_blocks / v_blocks read through its own tables. The
mistake sentences live here because the driver names most of them as it compares.
"""

from __future__ import annotations

import weakref
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

import torch

from graders.checks.report import CheckReport, Mismatch, as_tensor, close, explain_difference
from graders.checks.serving_common import Rng, as_int_list
from graders.reference.paged_cache import PagedKVCache, blocks_for
from graders.sandbox.protocol import Pending, SubmissionError, SubmissionLink
from graders.wording import plural

ENTRY_POINT = "PagedKVCache"

RESERVES = "blocks are reserved up front: a sequence of length L holds exactly ceil(L / block_size) blocks"
OFF_BY_ONE = "a block that fills exactly takes one block too many (allocate when the next token has no slot)"
NO_MEMORY_ERROR = "running out of free blocks must raise MemoryError"
CHANGES_ON_ERROR = "a failed append changes the cache: check the free blocks before writing anything"
NOT_REUSED = "freed blocks are not returned to the free list"
FORK_COPIES = "fork allocates or copies blocks: the child shares every block of its parent"
NO_COPY_ON_WRITE = "an append writes into a last block another sequence shares: copy it first (copy-on-write)"
COPY_ONE_WAY = (
    "copy-on-write only happens for the child: the parent's append into the shared block must copy too"
)
COPIES_TOO_MUCH = "copy-on-write copies more than the shared, partly full last block"
FREE_SHARED = "free returns blocks another sequence still holds (count holders per block)"
GATHER_ORDER = "gather reads the blocks in index order, not in block-table order"
KV_SWAPPED = "keys and values are swapped"
UNKNOWN_ID = "an unknown seq_id must raise KeyError"
DTYPE_IGNORED = "the dtype argument is ignored: the blocks must be allocated in the dtype asked for"
STALE_SLOTS = (
    "paged_attention reads the whole last block, stale slots included: attend over the first L positions only"
)
NOT_SCALED = "paged_attention does not divide the scores by sqrt(head_dim)"
REUSED_ID = (
    "a freed seq_id keeps its old length (or blocks): an id used again after free starts an empty sequence"
)
KNOWN_MISTAKES = (
    RESERVES,
    OFF_BY_ONE,
    NO_MEMORY_ERROR,
    CHANGES_ON_ERROR,
    NOT_REUSED,
    FORK_COPIES,
    NO_COPY_ON_WRITE,
    COPY_ONE_WAY,
    COPIES_TOO_MUCH,
    FREE_SHARED,
    GATHER_ORDER,
    KV_SWAPPED,
    UNKNOWN_ID,
    DTYPE_IGNORED,
    STALE_SLOTS,
    NOT_SCALED,
    REUSED_ID,
)


Offsets = dict[str, int | str]


@dataclass(frozen=True)
class Dims:
    n_blocks: int
    block_size: int
    n_heads: int
    head_dim: int

    def __str__(self) -> str:
        return (
            f"n_blocks={self.n_blocks} block_size={self.block_size} "
            f"n_heads={self.n_heads} head_dim={self.head_dim}"
        )


def _free_count(got: Any) -> int:
    if type(got) is not int:
        raise Mismatch(f"num_free_blocks() should return an int, got {type(got).__name__}")
    return got


def _fail(report: CheckReport, mistake: str, message: str) -> Mismatch:
    report.diagnose(mistake)
    return Mismatch(f"{message}: {mistake}")


_DEFINED: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()  # session -> has the class


class Driver:
    """One submission cache and the reference, driven by the same calls."""

    def __init__(
        self,
        report: CheckReport,
        session: SubmissionLink,
        rng: Rng,
        dims: Dims,
        dtype: torch.dtype | None = None,
    ):
        self.report, self.session, self.rng, self.dims = report, session, rng, dims
        self.dtype = dtype or torch.float32
        args = (dims.n_blocks, dims.block_size, dims.n_heads, dims.head_dim)
        if session not in _DEFINED:  # asked once per session: most tests build a cache
            _DEFINED[session] = session.has(ENTRY_POINT)
        if not _DEFINED[session]:
            raise Mismatch("define class PagedKVCache at the top level of your file")
        kwargs: dict[str, Any] = {"dtype": dtype} if dtype is not None else {}
        self.cache = session.call(ENTRY_POINT, *args, keep=True, **kwargs)
        self.ref = PagedKVCache(*args, dtype=self.dtype)
        self.log: list[str] = []
        # num_free_blocks() after each call, queued: (its answer, the reference's, where, mistakes).
        # They go out with the next call whose answer the driver needs and are checked, in order,
        # before it: one round trip for a run of appends, forks and frees instead of one each.
        self.deferred: list[tuple[Pending, int, str, Offsets | None]] = []

    def method(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """A call answered now; the checks queued before it are settled first (an earlier failure
        is the test's, as when every call was checked at once)."""
        try:
            target = getattr(self.cache, name)
        except AttributeError:
            raise Mismatch(f"PagedKVCache has no method {name}") from None
        try:
            result = self.session.call(target, *args, **kwargs)
        except SubmissionError:
            self.settle()
            raise
        self.settle()
        return result

    def queue(self, name: str, *args: Any) -> Pending:
        """A method call that goes out with the next one (an error it raises is raised there). Its
        MemoryError is an answer like any other: a queued append may run out of blocks after an
        earlier call lost some, whose check, settled first, names that mistake."""
        return self.session.call_later(getattr(self.cache, name), *args, memory_error_is_data=True)

    def where(self) -> str:
        return "after " + ", ".join(self.log[-4:]) if self.log else "on a new cache"

    def free_blocks(self) -> int:
        return _free_count(self.method("num_free_blocks"))

    def expect_free(self, mistakes: Offsets | None = None) -> None:
        """num_free_blocks() must equal the reference's now: queued, checked by settle().

        `mistakes` maps a mistake to the difference (got - expected) it shows: a number, or
        "fewer" / "more" for any difference of that sign."""
        self.deferred.append(
            (self.queue("num_free_blocks"), self.ref.num_free_blocks(), self.where(), mistakes)
        )

    def settle(self) -> None:
        """Check every queued num_free_blocks() in order; the first difference fails the test."""
        while self.deferred:
            pending, want, where, mistakes = self.deferred.pop(0)
            self._expect_free_now(_free_count(pending.value()), want, where, mistakes)

    def _expect_free_now(self, got: int, want: int, where: str, mistakes: Offsets | None) -> None:
        if got != want:
            message = f"{where}: num_free_blocks() is {got}, expected {want} of {self.dims.n_blocks}"
            for mistake, offset in (mistakes or {}).items():
                if (
                    offset == got - want
                    or (offset == "fewer" and got < want)
                    or (offset == "more" and got > want)
                ):
                    raise _fail(self.report, mistake, message)
            raise Mismatch(message)

    def kv(self, n: int) -> tuple[torch.Tensor, torch.Tensor]:
        H, hd = self.dims.n_heads, self.dims.head_dim
        k = self.rng.randn(H, n, hd).to(self.dtype) * 2 + 1  # keys and values differ in distribution
        v = self.rng.randn(H, n, hd).to(self.dtype) * 0.5 - 1
        if self.dtype == torch.float64:  # values a float32 cache could not hold
            k, v = k + 1e-9, v - 1e-9
        return k, v

    def append(self, seq: Hashable, n: int, mistakes: Offsets | None = None) -> None:
        k, v = self.kv(n)
        self.log.append(f"append({seq!r}, n={n})")
        self.ref.append(seq, k, v)
        self.queue("append", seq, k, v)  # with num_free_blocks: one round trip
        self.expect_free(mistakes)

    def append_or_refuse(self, seq: Hashable, n: int) -> bool:
        """An append the reference may refuse: then the submission must raise MemoryError too and
        change nothing. True when the append went in."""
        k, v = self.kv(n)
        try:
            self.ref.append(seq, k, v)
        except MemoryError:
            free = self.ref.num_free_blocks()
            self.log.append(f"a refused append({seq!r}, n={n}) with {plural(free, 'free block')}")
            try:
                self.method("append", seq, k, v, memory_error_is_data=True)
            except SubmissionError as exc:
                if exc.type_name != "MemoryError":
                    raise _fail(
                        self.report, NO_MEMORY_ERROR, f"{self.where()} raised {exc.type_name}"
                    ) from None
                self.expect_free({CHANGES_ON_ERROR: "fewer"})
                return False
            raise _fail(self.report, NO_MEMORY_ERROR, f"{self.where()}: the append did not raise") from None
        self.log.append(f"append({seq!r}, n={n})")
        self.queue("append", seq, k, v)
        self.expect_free()
        return True

    def fork(self, src: Hashable, dst: Hashable) -> None:
        self.log.append(f"fork({src!r}, {dst!r})")
        self.ref.fork(src, dst)
        self.queue("fork", src, dst)
        self.expect_free({FORK_COPIES: "fewer"})
        tables = self.queue("block_table", dst), self.queue("block_table", src)
        self.settle()
        table, parent = (
            as_int_list(t.value(), f"block_table({s!r})") for t, s in zip(tables, (dst, src), strict=True)
        )
        if table != parent:
            raise _fail(
                self.report,
                FORK_COPIES,
                f"after fork({src!r}, {dst!r}) the child's blocks {table} are not the parent's {parent}",
            )

    def free(self, seq: Hashable, mistakes: Offsets | None = None) -> None:
        self.log.append(f"free({seq!r})")
        self.ref.free(seq)
        self.queue("free", seq)
        self.expect_free(mistakes)

    def table(self, seq: Hashable) -> list[int]:
        return as_int_list(self.method("block_table", seq), f"block_table({seq!r})")

    def check_sequence(self, seq: Hashable) -> None:
        """block_table length, gather, and the submission's own blocks read through its table."""
        length = self.ref.lengths[seq]
        queued = self.queue("block_table", seq), self.queue("gather", seq)  # one round trip for both
        self.settle()
        table = as_int_list(queued[0].value(), f"block_table({seq!r})")
        want_blocks = blocks_for(length, self.dims.block_size)
        if len(table) != want_blocks:
            message = (
                f"{self.where()}: sequence {seq!r} of length {length} holds {len(table)} blocks, "
                f"expected {want_blocks}"
            )
            if length % self.dims.block_size == 0 and len(table) == want_blocks + 1:
                raise _fail(self.report, OFF_BY_ONE, message)
            raise _fail(self.report, RESERVES, message) if len(table) > want_blocks else Mismatch(message)
        want_k, want_v = self.ref.gather(seq)
        got = queued[1].value()
        if not isinstance(got, tuple | list) or len(got) != 2:
            raise Mismatch(f"gather({seq!r}) should return a pair (k, v), got {type(got).__name__}")
        got_k, got_v = as_tensor(got[0], "k"), as_tensor(got[1], "v")
        for g, w, what in ((got_k, want_k, "k"), (got_v, want_v, "v")):
            if g.dtype != w.dtype:
                mistake = DTYPE_IGNORED if self.dtype != torch.float32 else None
                message = (
                    f"gather({seq!r}) returned {what} of dtype {g.dtype}, the cache was built for {w.dtype}"
                )
                raise _fail(self.report, mistake, message) if mistake else Mismatch(message)
            if not close(g, w):
                message = f"{self.where()}: gather({seq!r}) " + explain_difference(g, w, what)
                if close(got_k, want_v) and close(got_v, want_k):
                    raise _fail(self.report, KV_SWAPPED, message)
                if self._blocks_in_index_order(table, length, g, what):
                    raise _fail(self.report, GATHER_ORDER, message)
                raise Mismatch(message)

    def _blocks_in_index_order(self, table: list[int], length: int, got: torch.Tensor, what: str) -> bool:
        if sorted(table) == table:
            return False
        try:
            blocks = self.session.get(getattr(self.cache, f"{what}_blocks"))
        except (TypeError, KeyError, AttributeError, SubmissionError):
            return False
        if not isinstance(blocks, torch.Tensor) or blocks.dim() != 4:
            return False
        H, hd = self.dims.n_heads, self.dims.head_dim
        in_order = blocks[sorted(table)].transpose(0, 1).reshape(H, -1, hd)[:, :length]
        return close(got, in_order)

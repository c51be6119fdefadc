"""paged-kv-cache: a block allocator with block tables, fork with copy-on-write, and paged attention.

The submission's PagedKVCache replays scripts of append / fork / free calls beside
graders.reference.paged_cache.PagedKVCache. Which physical block a cache hands out is its
own business, so only what the contract fixes is compared: num_free_blocks() after every
call (the free count does not depend on the allocation order), the length of each block
table (ceil(L / block_size)), the tables a fork shares, gather against the tokens appended,
and the submission's own k_blocks / v_blocks read through its own block tables. Appends are
ordinary calls: a prompt that spans blocks, one that fills its last block exactly, decode
steps, an append that does not fit, appends after a fork to the child first and to the
parent first, a new sequence after a free (so blocks are reused and hold stale slots).

Dimensions differ from each other (n_blocks, block_size, n_heads and head_dim are four
different numbers), keys differ from values, sequence ids are not 0..n-1, and one cache is
built with dtype=torch.float64, so a swapped or ignored argument changes the answer.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from functools import partial
from typing import Any

import torch

from graders.checks import paged_kv_cost, paged_kv_driver
from graders.checks.paged_kv_driver import (
    CHANGES_ON_ERROR,
    COPIES_TOO_MUCH,
    COPY_ONE_WAY,
    FREE_SHARED,
    NO_COPY_ON_WRITE,
    NO_MEMORY_ERROR,
    NOT_REUSED,
    NOT_SCALED,
    OFF_BY_ONE,
    RESERVES,
    REUSED_ID,
    STALE_SLOTS,
    UNKNOWN_ID,
    Dims,
    Driver,
    _fail,
)
from graders.checks.report import CheckReport, Mismatch, as_tensor, close, explain_difference, run_test
from graders.checks.serving_common import Rng, call_entry, figure_test
from graders.reference.paged_cache import attention, blocks_for
from graders.sandbox.protocol import SubmissionError, SubmissionLink
from graders.wording import exception_text, plural

SLUG = "paged-kv-cache"
ENTRY_POINT = paged_kv_driver.ENTRY_POINT
KNOWN_MISTAKES = paged_kv_driver.KNOWN_MISTAKES  # the sentences live beside the driver that names them

# --- tests -----------------------------------------------------------------------------------------


def _test_storage(report: CheckReport, session: SubmissionLink, rng: Rng, dims: Dims) -> None:
    d = Driver(report, session, rng, dims)
    want = (dims.n_blocks, dims.n_heads, dims.block_size, dims.head_dim)
    for name in ("k_blocks", "v_blocks"):
        try:
            blocks = session.get(getattr(d.cache, name))
        except (TypeError, KeyError) as exc:
            raise Mismatch(f"PagedKVCache(...).{name} should be a tensor: {exc}") from None
        except AttributeError:
            raise Mismatch(f"PagedKVCache has no attribute {name}") from None
        except SubmissionError as exc:
            raise Mismatch(f"PagedKVCache has no attribute {name} ({exc.type_name})") from None
        if not isinstance(blocks, torch.Tensor) or tuple(blocks.shape) != want:
            shape = tuple(blocks.shape) if isinstance(blocks, torch.Tensor) else type(blocks).__name__
            raise Mismatch(
                f"{name} is {shape}, expected (n_blocks, n_heads, block_size, head_dim) = {want} for {dims}"
            )
    d.expect_free()
    d.settle()


def _test_block_counts(report: CheckReport, session: SubmissionLink, rng: Rng, dims: Dims) -> None:
    bs = dims.block_size
    d = Driver(report, session, rng, dims)
    a, b = 17, 5
    d.append(a, bs + 2, {RESERVES: "fewer"})  # 2 blocks, and not one more
    d.append(b, 2 * bs, {OFF_BY_ONE: -1, RESERVES: "fewer"})  # fills its second block exactly
    d.check_sequence(b)
    for seq in (a, b, a, b, a):  # decode steps: b's first one needs a new block
        d.append(seq, 1)
    d.check_sequence(a)
    d.check_sequence(b)


def _test_memory_error(report: CheckReport, session: SubmissionLink, rng: Rng, dims: Dims) -> None:
    bs = dims.block_size
    d = Driver(report, session, rng, dims)
    d.append(3, bs + 1)  # 2 blocks, bs - 1 free slots in the last
    d.append(8, 2 * bs)
    free = d.ref.num_free_blocks()
    too_many = (bs - 1) + free * bs + 1  # one token more than the free slots
    k, v = d.kv(too_many)
    before = d.table(3)  # answered now: the checks queued so far are settled
    try:
        d.method("append", 3, k, v, memory_error_is_data=True)
    except SubmissionError as exc:
        if exc.type_name != "MemoryError":
            message = (
                f"appending {plural(too_many, 'token')} with {plural(free, 'free block')} raised "
                f"{exception_text(exc.type_name, exc.message[:100], parens=True)}"
            )
            raise _fail(report, NO_MEMORY_ERROR, message) from None
    else:
        appending = f"appending {plural(too_many, 'token')} with {plural(free, 'free block')}"
        raise _fail(report, NO_MEMORY_ERROR, f"{appending} did not raise")
    d.log.append(f"a failed append(3, n={too_many})")
    got_free = d.free_blocks()
    if got_free != free or d.table(3) != before:
        raise _fail(
            report,
            CHANGES_ON_ERROR,
            f"after the MemoryError num_free_blocks() is {got_free} "
            f"(was {free}) and block_table(3) is {d.table(3)} (was {before})",
        )
    try:
        d.check_sequence(3)
    except Mismatch as exc:
        raise _fail(report, CHANGES_ON_ERROR, str(exc)) from None
    d.append(3, too_many - 1)  # exactly what fits: every free block and the partial one
    d.check_sequence(3)


def _test_fork(report: CheckReport, session: SubmissionLink, rng: Rng, dims: Dims) -> None:
    bs = dims.block_size
    d = Driver(report, session, rng, dims)
    src, child = 40, 41
    d.append(src, 2 * bs + 1)  # a partly full last block
    d.fork(src, child)
    d.append(child, 1, {NO_COPY_ON_WRITE: +1, COPIES_TOO_MUCH: "fewer"})  # the child copies the shared block
    d.append(src, 1, {COPIES_TOO_MUCH: "fewer"})  # the parent's block is its own again: written in place
    d.check_sequence(src)
    d.settle()  # a queued check's failure is its own, not relabelled below
    try:
        d.check_sequence(child)
    except Mismatch as exc:
        raise _fail(report, NO_COPY_ON_WRITE, str(exc)) from None
    # The other way round: the parent writes first into a block it shares.
    other = 42
    d.fork(src, other)
    d.append(src, 1, {COPY_ONE_WAY: +1})
    d.append(other, 2)
    d.settle()
    for seq in (src, other):
        try:
            d.check_sequence(seq)
        except Mismatch as exc:
            raise _fail(report, NO_COPY_ON_WRITE, str(exc)) from None
    d.check_sequence(child)


def _test_free(report: CheckReport, session: SubmissionLink, rng: Rng, dims: Dims) -> None:
    bs = dims.block_size
    d = Driver(report, session, rng, dims)
    parent, child, other = 70, 71, 72
    d.append(parent, 2 * bs)  # two full blocks, shared by the fork
    d.fork(parent, child)
    d.append(child, 1)  # a new block of the child's own
    d.append(other, bs + 3)
    d.free(parent, {FREE_SHARED: "more"})  # both of its blocks are still the child's
    d.check_sequence(child)
    d.free(other, {NOT_REUSED: "fewer"})
    reuse = 73
    room = d.ref.num_free_blocks() * bs - rng.py.randint(1, bs - 1)  # leaves a partial last block
    d.append(reuse, room)  # every free block, the freed ones included
    for seq in (child, reuse):
        d.check_sequence(seq)


def _test_unknown_ids(report: CheckReport, session: SubmissionLink, rng: Rng, dims: Dims) -> None:
    d = Driver(report, session, rng, dims)
    d.append(5, 2)
    d.settle()  # the append's own failure is not an unknown id's
    for name, args in (("block_table", (99,)), ("gather", (99,)), ("free", (99,)), ("fork", (99, 100))):
        try:
            d.method(name, *args)
        except SubmissionError as exc:
            if exc.type_name == "KeyError":
                continue
            raise _fail(report, UNKNOWN_ID, f"{name}{args} raised {exc.type_name}") from None
        raise _fail(report, UNKNOWN_ID, f"{name}{args} did not raise")


def _script_step(d: Driver, ids: list[int], freed: set[Hashable]) -> None:
    """One random call of a script: an append (maybe too big for the pool, to a freed id half the
    time there is one), a fork followed by a chunk that crosses a block boundary, or a free; the
    sequence it touched is checked at once."""
    bs, py = d.dims.block_size, d.rng.py
    live = sorted(d.ref.lengths, key=str)
    op = py.choice(["append", "append", "fork", "free"] if live else ["append"])
    if op == "free":
        seq = py.choice(live)
        d.free(seq)
        freed.add(seq)
        return
    if op == "fork" and len(live) < len(ids):
        src, seq = py.choice(live), py.choice([i for i in ids if i not in d.ref.lengths])
        d.fork(src, seq)
        freed.discard(seq)  # the fork gave it its parent's length
        _script_append(d, seq, bs - d.ref.lengths[seq] % bs + py.randint(1, bs), freed)  # spills over
    else:
        again = sorted(freed - set(d.ref.lengths), key=str)
        seq = py.choice(again) if again and py.random() < 0.5 else py.choice(ids)
        _script_append(d, seq, py.randint(1, 2 * bs + 1), freed)


def _script_append(d: Driver, seq: Hashable, n: int, freed: set[Hashable]) -> None:
    d.settle()  # what failed before this append is not the reused id's
    try:
        if d.append_or_refuse(seq, n):
            d.check_sequence(seq)
        d.settle()
    except (Mismatch, SubmissionError) as exc:
        if seq not in freed:
            raise
        text = (
            str(exc)
            if isinstance(exc, Mismatch)
            else f"{d.where()}: " + exception_text(exc.type_name, exc.message[:100])
        )
        raise _fail(d.report, REUSED_ID, f"{text} (id {seq} was freed before)") from None
    if seq in d.ref.lengths:
        freed.discard(seq)


def _test_scripts(report: CheckReport, session: SubmissionLink, rng: Rng, dims: Dims) -> None:
    for _ in range(2):  # two scripts of 12 calls on a fresh cache each: the pool fills in both
        d = Driver(report, session, rng, dims)
        ids, freed = rng.py.sample(range(20, 60), 4), set[Hashable]()
        for _ in range(12):
            _script_step(d, ids, freed)
        if not freed:  # every script ends with an id used again after its free
            seq = next(iter(d.ref.lengths), ids[0])
            if seq not in d.ref.lengths:
                _script_append(d, seq, 1, freed)
            d.free(seq)
            freed.add(seq)
        _script_append(d, min(freed, key=str), d.rng.py.randint(1, 2 * dims.block_size), freed)


def _test_dtype(report: CheckReport, session: SubmissionLink, rng: Rng, dims: Dims) -> None:
    d = Driver(report, session, rng, dims, dtype=torch.float64)
    d.append(9, dims.block_size + 1)
    d.append(9, 1)
    d.check_sequence(9)


def _test_attention(report: CheckReport, session: SubmissionLink, rng: Rng, dims: Dims) -> None:
    bs = dims.block_size
    d = Driver(report, session, rng, dims)
    d.append(1, 2 * bs + 1)
    d.append(2, bs)  # exactly one block
    d.append(3, 1)
    d.free(1)
    d.append(4, bs + 2)  # reused blocks: the slots past its end hold what sequence 1 left there
    d.fork(2, 5)
    d.append(5, 1)  # the shared block is full: a new block, no copy
    d.settle()
    order = [4, 5, 3, 2]
    B, H, hd = len(order), dims.n_heads, dims.head_dim
    q = rng.randn(B, H, 1, hd) * 2
    got = as_tensor(
        call_entry(session, "paged_attention", q, d.cache, order), "paged_attention(q, cache, seq_ids)"
    )
    dense = [d.ref.gather(s) for s in order]
    want = torch.stack([attention(q[b], *dense[b]) for b in range(B)])
    if close(got, want):
        return
    lengths = [d.ref.lengths[s] for s in order]
    message = f"paged_attention over sequences of lengths {lengths}: " + explain_difference(
        got, want, "the output"
    )
    try:  # whole blocks, read from the submission's own storage through its own tables
        k_blocks, v_blocks = session.get(d.cache.k_blocks), session.get(d.cache.v_blocks)
    except (TypeError, KeyError, AttributeError, SubmissionError):
        raise Mismatch(message) from None
    stale = []
    for b, s in enumerate(order):
        table = d.table(s)
        k = k_blocks[table].transpose(0, 1).reshape(H, -1, hd)
        v = v_blocks[table].transpose(0, 1).reshape(H, -1, hd)
        stale.append(attention(q[b], k, v))
    if close(got, torch.stack(stale)):
        raise _fail(report, STALE_SLOTS, message)
    unscaled = torch.stack(
        [torch.softmax(q[b] @ k.transpose(-2, -1), -1) @ v for b, (k, v) in enumerate(dense)]
    )
    if close(got, unscaled):
        raise _fail(report, NOT_SCALED, message)
    raise Mismatch(message)


def _test_figure(report: CheckReport, session: SubmissionLink, rng: Rng) -> str:
    """Blocks the submission uses for a few sequences, against a contiguous T_max reservation each."""
    bs, t_max, n_seqs = 8, 64, 5
    dims = Dims(48, bs, 1, 2)
    d = Driver(report, session, rng, dims)
    lengths = [rng.py.randint(1, t_max) for _ in range(n_seqs)]
    while sum(blocks_for(n, bs) for n in lengths) > dims.n_blocks:
        lengths = [n // 2 + 1 for n in lengths]
    for i, n in enumerate(lengths):
        d.append(100 + i, n)
    used = dims.n_blocks - d.free_blocks()
    slots = used * bs
    reserved = n_seqs * t_max
    per_seq = " + ".join(str(blocks_for(n, bs)) for n in lengths)
    return (
        f"{n_seqs} sequences of lengths {', '.join(map(str, lengths))} hold {per_seq} = {used} blocks "
        f"of {bs} ({slots:,} slots, {slots - sum(lengths)} of them empty); a contiguous cache reserving "
        f"T_max = {t_max} positions per sequence would hold {reserved:,} slots "
        f"({reserved - sum(lengths):,} empty): paging uses {slots / reserved:.1%} of that memory."
    )


def run(session: SubmissionLink, seed: int | None = None) -> CheckReport:
    """The battery; `seed` makes a run reproducible (tests), None draws fresh inputs (grading)."""
    report = CheckReport()
    rng = Rng(seed)
    py = rng.py
    bs = py.choice([3, 4, 5])
    H = py.choice([h for h in (2, 3, 6) if h != bs])
    hd = py.choice([x for x in (6, 7, 8) if x not in (bs, H)])
    dims = Dims(py.randint(9, 12), bs, H, hd)

    def check(name: str, body: Callable[[Report_, SubmissionLink, Rng, Dims], Any]) -> None:
        run_test(report, name, lambda: body(report, session, rng, dims) and None)

    check(
        f"k_blocks and v_blocks are (n_blocks, n_heads, block_size, head_dim), every block free ({dims})",
        _test_storage,
    )
    check(
        f"a sequence of length L holds exactly ceil(L / {bs}) blocks: a prompt across blocks, one that "
        "fills its last block exactly, then decode steps",
        _test_block_counts,
    )
    check(
        "an append the free blocks cannot hold raises MemoryError and changes nothing; what fits still fits",
        _test_memory_error,
    )
    check(
        "fork shares every block; the next append to either copies a shared, partly full last block",
        _test_fork,
    )
    check("free returns only the blocks no other sequence holds, and freed blocks are reused", _test_free)
    check("block_table, gather, free and fork raise KeyError for an unknown seq_id", _test_unknown_ids)
    check("PagedKVCache(..., dtype=torch.float64) stores float64", _test_dtype)
    check(
        "random scripts of append, fork and free on a small pool (full pools, a chunk across a block "
        "boundary right after a fork, ids used again after free): every call agrees with the reference",
        _test_scripts,
    )
    check(
        "paged_attention over sequences of different lengths (one in reused blocks) equals dense attention",
        _test_attention,
    )
    figure_test(
        report,
        "blocks used against a contiguous T_max reservation",
        partial(_test_figure, report, session, rng),
    )
    figure_test(report, paged_kv_cost.NAME, lambda: paged_kv_cost.figure(session, rng))
    return report


Report_ = CheckReport

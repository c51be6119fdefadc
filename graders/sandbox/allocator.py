"""The submission process's glibc allocator: fixed thresholds, and a kept heap for one call.

`return_freed_memory()` (the child's setting, made once before its first request): every freed
block over 64 KiB goes back to the kernel at once. By default glibc raises its mmap threshold to
the largest block freed so far (up to 32 MiB) and keeps freed heap memory for reuse, so a
process's resident memory drifts up by several MiB per call. The checks measure the child's peak
resident memory from outside (graders/sandbox/outside.py) against a budget: with fixed thresholds
an honest submission's peak stays near what it holds now (mallopt fixes both and turns the
adjustment off). A submission that changes them back only keeps more memory resident, which
counts against it.

`kept_heap()`, around one call a check asks for (`"heap": "kept"` in the request): blocks up to
32 MiB come from the heap and freed ones stay there for reuse until the call returns, then the
fixed thresholds are back and the heap is trimmed. Why: with the fixed thresholds each block over
64 KiB is a fresh mmap, every page of it a page fault. int4-weight-matmul's loop over 32 groups
of a (4096, 2048) weight makes some 100 MiB of such blocks, (N, group_size / 2) floats at a time:
27,000 faults, 95-155 ms, against 16.5 ms with the heap kept (in-process, 2026-12-02). What the
kernel counts stays an upper bound of what the call held at once (freed blocks are reused before
the heap grows), so a budget the peak is held to still catches the whole weight dequantized
(96 MiB of peak with fixed thresholds, 112 MiB with the heap kept, on the same weight).
"""

from __future__ import annotations

import contextlib
import ctypes
from collections.abc import Iterator

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's malloc.h
FIXED_THRESHOLD = 64 * 1024
KEPT_MMAP_THRESHOLD = 32 << 20  # glibc's largest mmap threshold on 64-bit
KEPT_TRIM_THRESHOLD = 2**31 - 1  # mallopt takes an int: 2 GiB, no trim while the call runs

_libc: ctypes.CDLL | None
try:  # resolved while the process can still look symbols up, before the child's first request
    _libc = ctypes.CDLL(None)
    _mallopt, _malloc_trim = _libc.mallopt, _libc.malloc_trim
    _mallopt.argtypes, _malloc_trim.argtypes = [ctypes.c_int, ctypes.c_int], [ctypes.c_size_t]
except (OSError, AttributeError):  # not glibc: the budgets' slack covers a drifting allocator
    _libc = None


def _thresholds(mmap: int, trim: int) -> None:
    if _libc is not None:
        _mallopt(M_MMAP_THRESHOLD, mmap)
        _mallopt(M_TRIM_THRESHOLD, trim)


def return_freed_memory() -> None:
    """Fix both thresholds at 64 KiB and hand back what the heap holds free now."""
    _thresholds(FIXED_THRESHOLD, FIXED_THRESHOLD)
    if _libc is not None:
        _malloc_trim(0)


@contextlib.contextmanager
def kept_heap() -> Iterator[None]:
    """Freed blocks up to 32 MiB stay in the heap while the block runs; fixed again after it."""
    _thresholds(KEPT_MMAP_THRESHOLD, KEPT_TRIM_THRESHOLD)
    try:
        yield
    finally:
        return_freed_memory()

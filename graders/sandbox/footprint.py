"""Memory footprints a check can ask the submission's process for (it runs in the child).

Two measurements, both of the child's own objects:

- `measured_call(fn, args, kwargs)`: runs one call under a TorchDispatchMode and tracemalloc
  and returns `(result, largest)`, `largest` being the most floating-point elements any one
  tensor held that an operation of the call created (a fresh allocation: views and in-place
  results share an input's storage and are not counted), or any NumPy array it allocated
  (NumPy reports its buffers to tracemalloc; the peak is converted at 4 bytes per element).
  The tiled-attention battery measures *every* call this way, so a submission cannot behave
  one way when measured and another way when not.
- `storages(obj)`: the distinct tensor storages reachable from an object through its
  attributes and the lists, tuples and dicts in them (a few levels deep), as
  `(data_ptr, nbytes)` pairs: enough to see a cache's storage grow or move between calls.

What this does not protect against: it runs in the submission's process, so a submission
that goes looking for the mode or for tracemalloc can switch them off and under-report.
The numerical tests never depend on it; these are checks of honest designs.
"""

from __future__ import annotations

import tracemalloc
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

MAX_DEPTH = 4
MAX_OBJECTS = 10_000


def _storage_ptr(t: torch.Tensor) -> int:
    try:
        return int(t.untyped_storage().data_ptr())
    except (RuntimeError, NotImplementedError):
        return 0


class _LargestFloatTensor(TorchDispatchMode):
    """Records the largest freshly allocated floating-point tensor any operation returns."""

    def __init__(self) -> None:
        super().__init__()
        self.largest = 0

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        inputs = {_storage_ptr(t) for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor)}
        for t in tree_flatten(out)[0]:
            if isinstance(t, torch.Tensor) and t.is_floating_point() and _storage_ptr(t) not in inputs:
                self.largest = max(self.largest, t.numel())
        return out


def measured_call(fn: Any, args: Any, kwargs: Any) -> tuple[Any, int]:
    """fn(*args, **kwargs) and the largest float tensor (or NumPy array) it built, in elements."""
    was_tracing = tracemalloc.is_tracing()
    if not was_tracing:
        tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    mode = _LargestFloatTensor()
    try:
        with mode:
            result = fn(*args, **kwargs)
        peak = tracemalloc.get_traced_memory()[1] if tracemalloc.is_tracing() else 0
    finally:
        if not was_tracing:
            tracemalloc.stop()
    return result, max(mode.largest, (peak - base) // 4)


def storages(obj: Any) -> list[tuple[int, int]]:
    """(data_ptr, nbytes) of every distinct tensor storage reachable from obj, sorted."""
    found: dict[int, int] = {}
    seen: set[int] = set()

    def visit(value: Any, depth: int) -> None:
        if depth > MAX_DEPTH or id(value) in seen or len(seen) > MAX_OBJECTS:
            return
        seen.add(id(value))
        if isinstance(value, torch.Tensor):
            storage = value.untyped_storage()
            found[int(storage.data_ptr())] = int(storage.nbytes())
            return
        if isinstance(value, dict):
            children: Any = list(value.values())
        elif isinstance(value, list | tuple | set):
            children = list(value)
        else:
            children = list(getattr(value, "__dict__", {}).values())
            for name in getattr(type(value), "__slots__", ()):
                if hasattr(value, name):
                    children.append(getattr(value, name))
        for child in children:
            visit(child, depth + 1)

    visit(obj, 0)
    return sorted(found.items())

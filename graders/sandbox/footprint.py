"""Memory footprints a check can ask the submission's process for (it runs in the child).

Two measurements, both of the child's own objects:

- `measured_call(fn, args, kwargs)`: runs one call under a TorchFunctionMode and returns
  `(result, largest)`, `largest` being the most floating-point elements any one tensor held
  that a torch function or Tensor method of the call returned fresh (views and in-place
  results share an input's storage and are not counted).
  The tiled-attention battery measures *every* call this way, so a submission cannot behave
  one way when measured and another way when not.
- `storages(obj)`: the distinct tensor storages reachable from an object through its
  attributes and the lists, tuples and dicts in them (a few levels deep), as
  `(data_ptr, nbytes)` pairs: enough to see a cache's storage grow or move between calls.

Why a TorchFunctionMode and not a TorchDispatchMode: the first dispatch mode a process enters
imports some 800 modules (sympy, torch._dynamo: seconds), and the function level sees every
tensor the submission's own code makes. It does not see inside one fused call: the internals
of scaled_dot_product_attention count as its output only, and NumPy arrays are not seen
(tracemalloc would see them, at about twice the cost of a call; torch is what the contract
hands in and expects back).

What this does not protect against: it runs in the submission's process, so a submission
that goes looking for the mode can switch it off and under-report.
The numerical tests never depend on it; these are checks of honest designs.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.overrides import TorchFunctionMode

MAX_DEPTH = 4
MAX_OBJECTS = 10_000


def _storage_ptr(t: torch.Tensor) -> int:
    try:
        return int(t.untyped_storage().data_ptr())
    except (RuntimeError, NotImplementedError):
        return 0


def _tensors(value: Any, depth: int = 0) -> list[torch.Tensor]:
    """The tensors in a function's arguments or result (lists, tuples, dicts; a few levels)."""
    if isinstance(value, torch.Tensor):
        return [value]
    if depth < 3 and isinstance(value, list | tuple):
        return [t for item in value for t in _tensors(item, depth + 1)]
    if depth < 3 and isinstance(value, dict):
        return [t for item in value.values() for t in _tensors(item, depth + 1)]
    return []


class _LargestFloatTensor(TorchFunctionMode):
    """Records the largest freshly allocated floating-point tensor any torch function returns."""

    def __init__(self) -> None:
        super().__init__()
        self.largest = 0

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        fresh = [t for t in _tensors(out) if t.is_floating_point() and t.numel() > self.largest]
        if not fresh:
            return out
        inputs = {_storage_ptr(t) for t in _tensors((args, kwargs))}
        for t in fresh:
            if _storage_ptr(t) not in inputs:
                self.largest = max(self.largest, t.numel())
        return out


def measured_call(fn: Any, args: Any, kwargs: Any) -> tuple[Any, int]:
    """fn(*args, **kwargs) and the largest floating-point tensor it built, in elements."""
    mode = _LargestFloatTensor()
    with mode:
        result = fn(*args, **kwargs)
    return result, mode.largest


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

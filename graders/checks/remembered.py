"""Remember a pure computation's result by the value of its inputs, inside a scope.

On a mismatch a battery recomputes every known-wrong variant of a call from the call's inputs to
name the mistake; one verdict may ask for the same variants several times (rope-cached-attention's
y, k and v comparisons each do), and every golden mistake of a challenge on the same seed gets the
same inputs, so the seed sweep recomputed them over and over. `@remembered` keys a result by the
function's qualified name and a digest of its arguments' values (a tensor by dtype, shape and
bytes), so equal inputs give the stored result and any other value a fresh computation.

Results are kept only inside `with remembering():` (the grader opens one around each verdict, the
sweep around its run): outside one the function is simply called, so a long-lived server keeps
nothing. Scopes nest (an inner one shares the outer's store) and hold at most a byte budget of
tensors, the oldest entries going first. A caller must not modify what it gets back: the same
objects are handed to every caller (the batteries only compare with them).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, ParamSpec, TypeVar

import torch

P = ParamSpec("P")
R = TypeVar("R")

DEFAULT_BUDGET = 256 * 2**20  # bytes of tensors held by one scope's results


class _Store:
    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.held = 0  # bytes of the tensors in `entries`
        self.entries: OrderedDict[bytes, tuple[Any, int]] = OrderedDict()  # key -> (result, bytes)

    def add(self, key: bytes, result: Any) -> None:
        size = tensor_bytes(result)
        self.entries[key] = (result, size)
        self.held += size
        while self.held > self.budget and self.entries:  # a result over the whole budget goes too
            _, (_, gone) = self.entries.popitem(last=False)
            self.held -= gone


# A ContextVar, not a global: a server grading in several threads gives each its own scope.
_active: ContextVar[_Store | None] = ContextVar("remembering", default=None)


@contextmanager
def remembering(budget: int = DEFAULT_BUDGET) -> Iterator[None]:
    """Keep @remembered results until the outermost scope ends (an inner scope reuses its store)."""
    if _active.get() is not None:
        yield
        return
    token = _active.set(_Store(budget))
    try:
        yield
    finally:
        _active.reset(token)


def remembered(fn: Callable[P, R]) -> Callable[P, R]:
    """Return a stored result for arguments of the same value inside a scope (fn must be pure)."""
    name = f"{fn.__module__}.{fn.__qualname__}"

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        store = _active.get()
        if store is None:
            return fn(*args, **kwargs)
        key = digest(name, args, kwargs)
        if key in store.entries:
            store.entries.move_to_end(key)  # recently used: evicted last
            result: R = store.entries[key][0]
            return result
        result = fn(*args, **kwargs)
        store.add(key, result)
        return result

    return wrapper


def digest(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bytes:
    """The key for fn(*args, **kwargs); TypeError for an argument whose value it cannot read."""
    h = hashlib.blake2b(name.encode(), digest_size=32)
    _feed(h, args)
    _feed(h, dict(kwargs))
    return h.digest()


def _feed(h: Any, value: Any) -> None:
    # Every value is tagged by its type and length-prefixed, so no two different inputs share bytes.
    if isinstance(value, torch.Tensor):
        t = value.detach().cpu().resolve_conj().resolve_neg().contiguous()
        h.update(f"T{t.dtype}{tuple(t.shape)};".encode())
        h.update(t.reshape(-1).view(torch.uint8).numpy())  # the raw bytes
    elif value is None or isinstance(value, bool | int | str):  # bool before int: True is not 1 here
        text = repr(value)
        h.update(f"{type(value).__name__}{len(text)}:{text}".encode())
    elif isinstance(value, float):
        h.update(f"float:{value.hex()};".encode())
    elif isinstance(value, dict):
        h.update(f"dict{len(value)}:".encode())
        for key in sorted(value):
            _feed(h, key)
            _feed(h, value[key])
    elif isinstance(value, list | tuple):
        h.update(f"{type(value).__name__}{len(value)}:".encode())
        for item in value:
            _feed(h, item)
    else:
        raise TypeError(f"@remembered cannot key an argument of type {type(value).__name__}")


def tensor_bytes(value: Any) -> int:
    """Bytes of the tensors inside a result (dicts, lists, tuples, dataclasses), their storages whole."""
    if isinstance(value, torch.Tensor):
        return value.untyped_storage().nbytes()
    if isinstance(value, dict):
        return sum(tensor_bytes(v) for v in value.values())
    if isinstance(value, list | tuple):
        return sum(tensor_bytes(v) for v in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return sum(tensor_bytes(getattr(value, f.name)) for f in dataclasses.fields(value))
    return 0

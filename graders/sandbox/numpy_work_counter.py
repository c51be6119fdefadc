"""Multiply-adds of the NumPy matrix products a call makes, and its largest array (runs in the child).

work_counter.py's TorchFunctionMode sees torch calls only; this is its NumPy half, and
work_counter.counted_call runs both, so `call_counted` needs no new protocol operation.
`NumpyWork().call(fn, args, kwargs)` hands fn its NumPy arguments (top-level, and inside the
dicts, lists and tuples of them, a few levels deep) as views of `CountedArray`, an ndarray
subclass that overrides NumPy's two dispatch hooks:

- `__array_ufunc__`: every ufunc with a counted array among its operands, `@` included
  (x @ W with x plain and W counted dispatches to W's hook too): np.matmul, np.vecdot,
  np.matvec and np.vecmat count (their result's size) x (the contracted length).
- `__array_function__`: np.dot (and the .dot method), np.inner, np.tensordot, np.einsum (2 or
  more operands: the product of the sizes of its distinct indices, as torch's counter does),
  np.vdot and np.outer (m x n, a product of (m, 1) by (1, n)) count; any other function runs
  on the counted arrays themselves, so the products inside np.linalg.multi_dot or np.linalg.matmul
  are counted where they happen.

Results come back counted, so the arrays made from them are seen too; the largest fresh
floating-point array any of these made (a result sharing no memory with its operands, a copy by
.copy(), .astype() or fancy indexing) is recorded in elements. When the call returns, every
counted array reachable from its arguments and result through those containers is plain
again (an argument the call did not replace is the very object it was).

What it does not see (the blind spots tests/graders/sandbox/test_numpy_work_counter.py pins down):
np.asarray, np.array and np.ascontiguousarray of a counted array return a plain one, and arrays
made from nothing (np.ones, np.zeros, np.tri, np.eye, a Generator's) are plain: products and
sizes among plain arrays only go uncounted. A product spelled elementwise, (k * q).sum(-1) for
k @ q, is no matrix product (its (t, d) temporary is seen); nor are Python loops over .tolist()
values, or the work inside one NumPy call (its temporaries). A counted array stored where the walk
does not reach (a global, an object's attribute) stays counted after the call: outside a counted
call it counts nothing and its results are plain arrays, at one Python call per operation.
During the call, `type(a) is np.ndarray` is False for a counted argument (isinstance holds).
Like the torch half, it runs in the submission's process, so the figure informs and never
decides (graders/checks/cost.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

MAX_DEPTH = 4  # container levels the wrapping walks, as footprint.storages does
_active: list[NumpyWork] = []  # the counted call in progress (a stack: counted calls may nest)


def _root(a: np.ndarray) -> np.ndarray:
    """The array that owns a's memory (views chain through .base)."""
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


def _arrays(value: Any, depth: int = 0) -> list[np.ndarray]:
    """The arrays among a call's operands or results (lists and tuples of them, two levels)."""
    if isinstance(value, np.ndarray):
        return [value]
    if depth < 2 and isinstance(value, list | tuple):
        return [a for item in value for a in _arrays(item, depth + 1)]
    if depth < 2 and isinstance(value, dict):
        return [a for item in value.values() for a in _arrays(item, depth + 1)]
    return []


def _plain(value: Any, depth: int = 0) -> Any:
    """value with every counted array in it (lists, tuples, dicts: two levels) as a plain view."""
    if isinstance(value, CountedArray):
        return value.view(np.ndarray)
    if depth < 2 and type(value) in (list, tuple):
        items = [_plain(item, depth + 1) for item in value]
        return items if type(value) is list else tuple(items)
    if depth < 2 and type(value) is dict:
        return {key: _plain(item, depth + 1) for key, item in value.items()}
    return value


def _counted(value: Any) -> Any:
    """A result's arrays as counted views, so later operations on them are seen too."""
    if isinstance(value, np.ndarray) and not isinstance(value, CountedArray):
        return value.view(CountedArray)
    if isinstance(value, tuple):
        return tuple(_counted(item) for item in value)
    return value


def _note(madds: int, results: Any, operands: Any) -> None:
    """Add a call's multiply-adds, and its largest fresh float result, to the counted call."""
    for work in _active:
        work.multiply_adds += madds
        fresh = [r for r in _arrays(results) if r.dtype.kind == "f" and r.size > work.largest]
        if fresh:
            inputs = {id(_root(a)) for a in _arrays(operands)}
            for r in fresh:
                if id(_root(r)) not in inputs:
                    work.largest = max(work.largest, int(r.size))


def _contracted(a: Any, axis: int) -> int:
    shape = np.shape(a)
    return int(shape[axis]) if shape else 0  # a 0-d operand is an elementwise product: no sum


def _ufunc_madds(ufunc: Any, inputs: tuple[Any, ...], kwargs: dict[str, Any], result: Any) -> int:
    """matmul (…, n, k) x (…, k, m), vecdot, matvec, vecmat: (result size) x (contracted length)."""
    if ufunc not in _PRODUCT_UFUNCS or len(inputs) < 2:
        return 0
    axis = -1
    if kwargs.get("axes") is not None:  # the first operand's core axes, the contracted one last
        first = kwargs["axes"][0]
        axis = first[-1] if isinstance(first, tuple | list) else first
    elif kwargs.get("axis") is not None:  # vecdot's
        axis = kwargs["axis"]
    return int(np.size(result)) * _contracted(inputs[0], axis)


_PRODUCT_UFUNCS = {
    getattr(np, name) for name in ("matmul", "vecdot", "matvec", "vecmat") if hasattr(np, name)
}


def _einsum(args: tuple[Any, ...], result: Any) -> int:
    """(result size) x (the sizes of the summed indices): every distinct index's size multiplied."""
    subscripts, operands = args[0], args[1:]
    if not isinstance(subscripts, str) or len(operands) < 2:  # one operand: a sum or a transpose
        return 0
    inputs, _, output = subscripts.replace(" ", "").partition("->")
    terms = inputs.split(",")
    if "->" not in subscripts:  # implicit output: the indices that appear once
        letters = inputs.replace(",", "").replace(".", "")
        output = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    sizes: dict[str, int] = {}
    for term, operand in zip(terms, operands, strict=False):
        shape = np.shape(operand)
        head, _, tail = term.partition("...")
        pairs = list(zip(head, shape, strict=False))
        if tail:
            pairs += list(zip(tail, shape[len(shape) - len(tail) :], strict=False))
        for letter, n in pairs:
            sizes[letter] = max(sizes.get(letter, 1), int(n))
    summed = [n for letter, n in sizes.items() if letter not in output]
    return int(np.size(result)) * math.prod(summed)


def _tensordot(args: tuple[Any, ...], kwargs: dict[str, Any], result: Any) -> int:
    a = np.shape(args[0])
    axes = kwargs.get("axes", args[2] if len(args) > 2 else 2)
    if isinstance(axes, int):
        summed = math.prod(a[len(a) - axes :]) if axes else 1
    else:
        mine = axes[0] if isinstance(axes[0], list | tuple) else [axes[0]]
        summed = math.prod(a[i] for i in mine)
    return int(np.size(result)) * int(summed)


ProductCost = Callable[[tuple[Any, ...], dict[str, Any], Any], int]  # (args, kwargs, result) -> madds
_PRODUCT_FUNCTIONS: dict[Any, ProductCost] = {
    np.dot: lambda args, kwargs, result: int(np.size(result)) * _contracted(args[0], -1),
    np.inner: lambda args, kwargs, result: int(np.size(result)) * _contracted(args[0], -1),
    np.vdot: lambda args, kwargs, result: int(np.size(args[0])),
    np.outer: lambda args, kwargs, result: int(np.size(result)),
    np.tensordot: _tensordot,
    np.einsum: lambda args, kwargs, result: _einsum(args, result),
}


class CountedArray(np.ndarray):
    """An ndarray view whose ufuncs and NumPy functions are counted by the active NumpyWork."""

    def __array_finalize__(self, obj: Any) -> None:
        # Copies made without a ufunc or a NumPy function: .copy(), .astype(), fancy indexing.
        if not _active or self.dtype.kind != "f":
            return
        if not isinstance(obj, np.ndarray) or _root(self) is not _root(obj):
            _note(0, self, ())

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        out = kwargs.get("out")
        plain_inputs = tuple(_plain(x) for x in inputs)
        if out is not None:  # in place: the ufunc writes into the out arrays' memory
            kwargs["out"] = tuple(_plain(o) for o in out)
        result = getattr(ufunc, method)(*plain_inputs, **kwargs)
        if _active:
            madds = _ufunc_madds(ufunc, plain_inputs, kwargs, result) if method == "__call__" else 0
            _note(madds, result, (plain_inputs, kwargs.get("out")))
        if out is None:
            return _counted(result) if _active else result
        results = result if isinstance(result, tuple) else (result,)
        given = tuple(o if o is not None else _counted(r) for o, r in zip(out, results, strict=False))
        return given[0] if len(given) == 1 else given

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        if not _active and kwargs.get("out") is None:  # a counted array kept past its call: plain again
            return func(*_plain(args), **_plain(kwargs))
        cost = _PRODUCT_FUNCTIONS.get(func)
        if cost is None:  # runs on the counted arrays: the products inside it are counted there
            result = super().__array_function__(func, types, args, kwargs)
            if _active:
                _note(0, result, (args, kwargs))
            return _counted(result) if _active else result
        plain_args, plain_kwargs = _plain(args), _plain(kwargs)
        result = func(*plain_args, **plain_kwargs)
        if _active:
            _note(cost(plain_args, plain_kwargs, result), result, (plain_args, plain_kwargs))
        if plain_kwargs.get("out") is not None:
            return kwargs["out"]
        return _counted(result) if _active else result

    def dot(self, b: Any, out: Any = None) -> Any:  # type: ignore[override]
        """ndarray.dot calls no dispatch hook: route it through np.dot's."""
        return np.dot(self, b, out=out)


class NumpyWork:
    """The multiply-adds and the largest fresh float array (in elements) of one counted call."""

    def __init__(self) -> None:
        self.multiply_adds = 0
        self.largest = 0
        self._originals: dict[int, tuple[CountedArray, np.ndarray]] = {}  # id(view) -> (view, its array)

    def call(self, fn: Any, args: Any, kwargs: dict[str, Any]) -> Any:
        """fn(*args, **kwargs) with its NumPy arguments counted; every array plain again after."""
        seen: set[int] = set()
        args = self._wrap(tuple(args), 0, seen)
        kwargs = self._wrap(kwargs, 0, seen)
        _active.append(self)
        try:
            result = fn(*args, **kwargs)
        finally:
            _active.remove(self)
            seen.clear()
            self._unwrap(args, 0, seen)
            self._unwrap(kwargs, 0, seen)
        return self._unwrap(result, 0, seen)

    def _wrap(self, value: Any, depth: int, seen: set[int]) -> Any:
        return self._walk(value, self._counted_view, depth, seen)

    def _unwrap(self, value: Any, depth: int, seen: set[int]) -> Any:
        return self._walk(value, self._plain, depth, seen)

    def _walk(self, value: Any, convert: Callable[[Any], Any], depth: int, seen: set[int]) -> Any:
        """`convert(value)` where it gives an array, else the same walk into dicts and lists (in
        place: the call may keep the dict, a cache it appends to) and tuples (rebuilt), down to
        MAX_DEPTH and into each container once."""
        converted = convert(value)
        if converted is not None:
            return converted
        if depth >= MAX_DEPTH or id(value) in seen:
            return value
        seen.add(id(value))
        if type(value) is dict:
            for key in list(value):
                value[key] = self._walk(value[key], convert, depth + 1, seen)
        elif type(value) is list:
            value[:] = [self._walk(item, convert, depth + 1, seen) for item in value]
        elif type(value) is tuple:
            return tuple(self._walk(item, convert, depth + 1, seen) for item in value)
        return value

    def _counted_view(self, value: Any) -> CountedArray | None:
        """A plain ndarray (not one of Python objects) as a counted view of itself, remembered; else None."""
        if type(value) is np.ndarray and value.dtype.kind != "O":
            view = value.view(CountedArray)
            self._originals[id(view)] = (view, value)
            return view
        return None

    def _plain(self, value: Any) -> np.ndarray | None:
        """A counted view as the array it was made from (a fresh one as a plain view); else None."""
        if isinstance(value, CountedArray):
            view, original = self._originals.get(id(value), (None, None))
            return original if view is value else value.view(np.ndarray)
        return None

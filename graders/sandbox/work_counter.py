"""Multiply-adds of the matrix products a call makes, and its largest tensor (runs in the child).

`counted_call(fn, args, kwargs) -> (result, largest, multiply_adds)`: the call runs under one
TorchFunctionMode that records, like footprint.py's, the largest fresh floating-point tensor, and
adds up the multiply-adds of every matrix product a torch function or Tensor method performs:
matmul / @ / mm / bmm / addmm / baddbmm / addbmm / F.linear / einsum / tensordot / dot / mv / inner.
A product of (…, m, k) by (…, k, n) costs (broadcast batch) x m x k x n; einsum costs the product
of the sizes of all its distinct indices; F.scaled_dot_product_attention costs its two products,
q (…, L, E) by k (…, S, E) and the weights by v (…, S, Ev): (q's batch) x L x S x (E + Ev), with
enable_gqa's shared kv heads counted once per query head as the math does (torch's own
FlopCounterMode counts 0 for it on the CPU, where it dispatches to a kernel without a formula).

Why at the function level: it sees every product the submission's own code asks torch for, at
the cost of one Python call per torch call. What it does not see: products inside one fused call
that is not in the list, tensors inside one (scaled_dot_product_attention's weights), and a submission
that finds the mode and switches it off (it runs in the submission's process). The grader
compares the figure with the reference's, measured by the same counter in its own process.
NumPy arrays among the arguments are counted by numpy_work_counter.py in the same call (the
numpy-cached-generation challenge): the figures add up, the largest of either side is the largest.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F

from graders.sandbox.footprint import _LargestFloatTensor
from graders.sandbox.numpy_work_counter import NumpyWork


def _shape(t: Any) -> tuple[int, ...]:
    return tuple(t.shape) if isinstance(t, torch.Tensor) else ()


def _matmul(a: tuple[int, ...], b: tuple[int, ...]) -> int:
    """Multiply-adds of torch.matmul(a, b) for shapes a and b (1-D operands as torch treats them)."""
    if not a or not b:
        return 0
    if len(a) == 1 and len(b) == 1:
        return a[0]
    if len(a) == 1:
        a = (1, *a)
    if len(b) == 1:
        b = (*b, 1)
    m, k, n = a[-2], a[-1], b[-1]
    return _broadcast_size(a[:-2], b[:-2]) * m * k * n


def _broadcast_size(a: tuple[int, ...], b: tuple[int, ...]) -> int:
    """The number of elements of the broadcast of two batch shapes (plain Python: this runs per call)."""
    size = 1
    for i in range(1, max(len(a), len(b)) + 1):
        x = a[-i] if i <= len(a) else 1
        y = b[-i] if i <= len(b) else 1
        size *= max(x, y)
    return size


def _einsum(args: Any) -> int:
    equation, operands = args[0], args[1:]
    if len(operands) == 1 and isinstance(operands[0], list | tuple):
        operands = tuple(operands[0])
    if not isinstance(equation, str):
        return 0
    inputs = equation.replace(" ", "").split("->")[0].split(",")
    sizes: dict[str, int] = {}
    for letters, t in zip(inputs, operands, strict=False):
        shape = _shape(t)
        letters = letters.replace("...", "")
        for letter, size in zip(reversed(letters), reversed(shape), strict=False):
            sizes[letter] = max(sizes.get(letter, 1), size)
    return math.prod(sizes.values()) if len(operands) > 1 else 0


def _attention(args: Any, kwargs: Any) -> int:
    q = _shape(args[0] if args else kwargs.get("query"))
    v = _shape(args[2] if len(args) > 2 else kwargs.get("value"))
    if len(q) < 2 or len(v) < 2:
        return 0
    return math.prod(q[:-1]) * v[-2] * (q[-1] + v[-1])


def _tensordot(args: Any, kwargs: Any) -> int:
    a, b = _shape(args[0]), _shape(args[1])
    dims = kwargs.get("dims", args[2] if len(args) > 2 else 2)
    if isinstance(dims, int):
        contracted = math.prod(a[len(a) - dims :]) if dims else 1
        return math.prod(a) * math.prod(b) // max(contracted, 1)
    return math.prod(a) * math.prod(b) // max(math.prod(a[i] for i in dims[0]), 1)


_MATMUL = {
    torch.matmul, torch.Tensor.matmul, torch.Tensor.__matmul__, torch.mm, torch.Tensor.mm, torch.bmm,
    torch.Tensor.bmm, torch.mv, torch.Tensor.mv, torch.dot, torch.Tensor.dot, torch.inner, torch.Tensor.inner,
}  # fmt: skip
_ADD_MATMUL = {torch.addmm, torch.Tensor.addmm, torch.baddbmm, torch.Tensor.baddbmm}  # (bias, a, b)


def multiply_adds(func: Any, args: Any, kwargs: Any) -> int:
    """The multiply-adds one torch call performs in its matrix products (0 for anything else)."""
    kwargs = kwargs or {}
    try:
        if func in _MATMUL and len(args) >= 2:
            return _matmul(_shape(args[0]), _shape(args[1]))
        if func is torch.Tensor.__rmatmul__ and len(args) >= 2:
            return _matmul(_shape(args[1]), _shape(args[0]))
        if func in _ADD_MATMUL and len(args) >= 3:
            return _matmul(_shape(args[1]), _shape(args[2]))
        if func in (torch.addbmm, torch.Tensor.addbmm) and len(args) >= 3:
            return _matmul(_shape(args[1]), _shape(args[2]))
        if func is F.linear and len(args) >= 2:
            x, w = _shape(args[0]), _shape(args[1])
            return math.prod(x) * (w[0] if len(w) == 2 else 1)
        if func is torch.einsum:
            return _einsum(args)
        if func is F.scaled_dot_product_attention:
            return _attention(args, kwargs)
        if func in (torch.tensordot, torch.Tensor.__rmatmul__):
            return _tensordot(args, kwargs)
    except (TypeError, ValueError, IndexError):
        return 0
    return 0


class _WorkCounter(_LargestFloatTensor):
    """footprint.py's largest-tensor recorder, plus the multiply-adds of every matrix product."""

    def __init__(self) -> None:
        super().__init__()
        self.multiply_adds = 0

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        self.multiply_adds += multiply_adds(func, args, kwargs)
        return super().__torch_function__(func, types, args, kwargs)


def counted_call(fn: Any, args: Any, kwargs: Any) -> tuple[Any, int, int]:
    """fn(*args, **kwargs), the largest floating-point tensor or NumPy array it built, and its
    multiply-adds (torch's and NumPy's together)."""
    mode, arrays = _WorkCounter(), NumpyWork()
    with mode:
        result = arrays.call(fn, args, kwargs)
    return result, max(mode.largest, arrays.largest), mode.multiply_adds + arrays.multiply_adds

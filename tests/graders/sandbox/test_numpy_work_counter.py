"""graders/sandbox/numpy_work_counter.py, through work_counter.counted_call (what call_counted runs):
the multiply-adds of each kind of NumPy product, the largest fresh array, the arrays plain again
after the call, and the blind spots its docstring names."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from graders.reference.numpy_generation import decode_step, init_params
from graders.sandbox.numpy_work_counter import CountedArray
from graders.sandbox.work_counter import counted_call

rng = np.random.default_rng(0)
A, B = rng.normal(size=(3, 4)), rng.normal(size=(4, 5))
BATCHED = rng.normal(size=(2, 3, 4))
ROW = rng.normal(size=4)

# Each product gets its operands as arguments, so the counter sees them counted.
CASES: list[tuple[str, Callable[..., Any], tuple[Any, ...], int]] = [
    ("a @ b", lambda a, b: a @ b, (A, B), 3 * 4 * 5),
    ("np.matmul broadcast", lambda x, b: np.matmul(x, b), (BATCHED, B), 2 * 3 * 4 * 5),
    ("matrix @ vector", lambda a, r: a @ r, (A, ROW), 3 * 4),
    ("vector @ vector", lambda r: r @ r, (ROW,), 4),
    ("np.dot 2-D", lambda a, b: np.dot(a, b), (A, B), 60),
    ("the .dot method", lambda a, b: a.dot(b), (A, B), 60),
    ("np.dot N-D", lambda x, b: np.dot(x, b), (BATCHED, B), 2 * 3 * 4 * 5),
    ("np.inner", lambda a: np.inner(a, a), (A,), 3 * 3 * 4),
    ("np.vdot", lambda r: np.vdot(r, r), (ROW,), 4),
    ("np.outer", lambda r: np.outer(r, r), (ROW,), 16),
    ("np.tensordot axes=1", lambda a, b: np.tensordot(a, b, axes=1), (A, B), 60),
    ("np.tensordot axes pairs", lambda a: np.tensordot(a, a, axes=([0], [0])), (A,), 4 * 4 * 3),
    ("np.einsum explicit", lambda a, b: np.einsum("ik,kj->ij", a, b), (A, B), 60),
    ("np.einsum implicit", lambda a, b: np.einsum("ik,kj", a, b), (A, B), 60),
    ("np.einsum ellipsis", lambda x, b: np.einsum("...ik,kj->...ij", x, b), (BATCHED, B), 120),
    ("np.einsum optimize", lambda a, b: np.einsum("ik,kj->ij", a, b, optimize=True), (A, B), 60),
    ("np.vecdot", lambda a: np.vecdot(a, a), (A,), 3 * 4),
    ("multi_dot: its two dots", lambda a, b: np.linalg.multi_dot([a, b, b.T]), (A, B), 60 + 3 * 5 * 4),
    ("np.linalg.matmul", lambda a, b: np.linalg.matmul(a, b), (A, B), 60),
    ("elementwise only", lambda a: np.exp(a * 2 + 1).sum(axis=-1), (A,), 0),
]


@pytest.mark.parametrize(("name", "fn", "args", "want"), CASES, ids=[c[0] for c in CASES])
def test_multiply_adds(name: str, fn: Callable[..., Any], args: tuple[Any, ...], want: int) -> None:
    result, _, madds = counted_call(fn, args, {})
    assert madds == want, name
    assert type(result) is not CountedArray  # plain again once the call returns


def test_a_plain_left_operand_still_dispatches_to_the_counted_right_one() -> None:
    """x @ W with x made in the call (plain) and W an argument: ndarray's @ defers to W's ufunc hook."""

    def project(w: np.ndarray) -> np.ndarray:
        x = np.ones((2, 4))  # made from nothing: plain
        return x @ w

    out, largest, madds = counted_call(project, (B,), {})
    assert madds == 2 * 4 * 5 and largest == 2 * 5
    assert np.allclose(out, np.ones((2, 4)) @ B)


def test_in_place_ops_write_through_and_results_made_from_counted_arrays_count_too() -> None:
    def accumulate(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        y = a @ b  # (3, 5), fresh and counted
        y += 1.0  # in place: no new array
        return y @ b.T  # counted because y is

    out, largest, madds = counted_call(accumulate, (A, B), {})
    assert madds == 60 + 60 and largest == 15
    assert np.allclose(out, (A @ B + 1.0) @ B.T)


def test_views_are_not_fresh_and_copies_are() -> None:
    big = rng.normal(size=(64, 32))
    _, largest, _ = counted_call(lambda x: (x.T, x[1:], x.reshape(-1)), (big,), {})
    assert largest == 0
    _, largest, _ = counted_call(lambda x: x.copy(), (big,), {})
    assert largest == 64 * 32
    _, largest, _ = counted_call(lambda x: x[[0, 1, 2]], (big,), {})  # fancy indexing copies
    assert largest == 3 * 32
    _, largest, _ = counted_call(lambda x: np.vstack([x, x[0]]), (big,), {})
    assert largest == 65 * 32


def test_the_reference_decode_step_counts_exactly_and_its_arguments_come_back_plain() -> None:
    t, d, V = 511, 64, 128  # the cost report's shape: t + 1 = 512 rows after the step
    params = init_params(rng, V, d)
    cache = {"k": rng.normal(size=(t, d)), "v": rng.normal(size=(t, d))}
    weights = dict(params)
    out, largest, madds = counted_call(decode_step, (params, 7, cache), {})
    # q, k, v of one token; scores and weights @ v over the 512 rows; W_o; W_lm
    assert madds == 3 * d * d + 2 * (t + 1) * d + d * d + d * V
    assert largest == (t + 1) * d  # the cache with its new row, from np.vstack
    assert type(out) is np.ndarray and type(cache["k"]) is np.ndarray and cache["k"].shape == (t + 1, d)
    assert all(params[name] is weights[name] for name in params)  # the very arrays handed in


def test_blind_spots_the_docstring_names() -> None:
    """np.asarray and np.array return plain arrays; arrays made from nothing are plain; an
    elementwise multiply and sum is no product. None of their multiply-adds are counted."""
    _, largest, madds = counted_call(lambda a, b: np.asarray(a) @ np.array(b), (A, B), {})
    assert (largest, madds) == (0, 0)
    _, largest, madds = counted_call(lambda n: np.ones((n, n)) @ np.tri(n), (64,), {})
    assert (largest, madds) == (0, 0)
    _, largest, madds = counted_call(lambda k, q: (k * q).sum(axis=-1), (A, ROW), {})  # k @ q, spelled out
    assert (largest, madds) == (3 * 4, 0)  # its (3, 4) temporary is seen, its products are not


def test_the_counted_type_is_visible_only_during_the_call() -> None:
    seen: list[bool] = []

    def look(a: np.ndarray) -> np.ndarray:
        seen.append(type(a) is np.ndarray)
        return a

    out, _, _ = counted_call(look, (A,), {})
    assert seen == [False] and isinstance(out, np.ndarray) and out is A


def test_a_counted_array_kept_past_its_call_counts_nothing_and_makes_plain_arrays() -> None:
    """An array stored where the unwrapping walk does not reach stays counted, but inert."""
    kept: list[Any] = []

    class Holder:
        pass

    holder = Holder()

    def keep(a: np.ndarray, into: list[Any]) -> None:
        holder.a = a  # type: ignore[attr-defined] # an object's attribute: not walked
        into.append(a)  # a list among the arguments: walked

    counted_call(keep, (A, kept), {})
    stray = holder.a  # type: ignore[attr-defined]
    assert type(stray) is CountedArray and kept[0] is A
    assert type(stray @ B) is np.ndarray and type(np.vstack([stray, stray])) is np.ndarray
    assert type(np.dot(stray, B)) is np.ndarray and np.allclose(stray @ B, A @ B)
    _, _, madds = counted_call(lambda b: b @ b.T, (B,), {})
    assert madds == 4 * 5 * 4  # an earlier call's array does not leak into a later call's count

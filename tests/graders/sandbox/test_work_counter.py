"""graders/sandbox/work_counter.py: the multiply-adds of each kind of matrix product, and the largest
tensor."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
import torch.nn.functional as F

from graders.sandbox.work_counter import counted_call

a, b = torch.randn(3, 4), torch.randn(4, 5)
batched, bb = torch.randn(2, 3, 4), torch.randn(2, 4, 5)
sdpa_qkv = (torch.randn(2, 8, 1, 16), torch.randn(2, 8, 512, 16), torch.randn(2, 8, 512, 16))
gqa_qkv = (torch.randn(2, 8, 1, 16), torch.randn(2, 2, 512, 16), torch.randn(2, 2, 512, 16))

CASES: list[tuple[str, Callable[[], Any], int]] = [
    ("a @ b", lambda: a @ b, 3 * 4 * 5),
    ("torch.matmul broadcast", lambda: torch.matmul(batched, b), 2 * 3 * 4 * 5),
    ("bmm", lambda: torch.bmm(batched, bb), 2 * 3 * 4 * 5),
    ("mm method", lambda: a.mm(b), 60),
    ("addmm", lambda: torch.addmm(torch.zeros(3, 5), a, b), 60),
    ("F.linear", lambda: F.linear(a, b.T), 60),
    ("einsum", lambda: torch.einsum("ik,kj->ij", a, b), 60),
    ("vector dot", lambda: torch.dot(a[0], a[1]), 4),
    ("matrix-vector", lambda: a @ b[:, 0], 12),
    ("elementwise only", lambda: (a * 2 + 1).exp(), 0),
    # sdpa: q (2, 8, 1, 16) against 512 keys, then the weights by v: 2 x 8 x 1 x 512 x (16 + 16)
    ("sdpa", lambda: F.scaled_dot_product_attention(*sdpa_qkv), 2 * 8 * 512 * 32),
    (
        "sdpa, kv heads shared",
        lambda: F.scaled_dot_product_attention(*gqa_qkv, enable_gqa=True),
        2 * 8 * 512 * 32,
    ),
    (
        "sdpa by keyword",
        lambda: F.scaled_dot_product_attention(query=sdpa_qkv[0], key=sdpa_qkv[1], value=sdpa_qkv[2]),
        2 * 8 * 512 * 32,
    ),
]


@pytest.mark.parametrize(("name", "fn", "want"), CASES, ids=[c[0] for c in CASES])
def test_multiply_adds(name: str, fn: Callable[[], Any], want: int) -> None:
    _, _, madds = counted_call(fn, (), {})
    assert madds == want, name


def test_products_inside_a_function_count_once_and_the_largest_tensor_is_recorded() -> None:
    def two(x: torch.Tensor) -> torch.Tensor:
        return (x @ b) @ b.T  # (3, 5) then (3, 4)

    out, largest, madds = counted_call(two, (a,), {})
    assert madds == 60 + 60 and largest == 15 and torch.allclose(out, (a @ b) @ b.T)

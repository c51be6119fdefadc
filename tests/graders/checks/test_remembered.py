"""graders/checks/remembered.py: results kept by the value of the inputs, only inside a scope."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
import torch

from graders.checks.remembered import digest, remembered, remembering, tensor_bytes

CALLS: list[Any] = []


@remembered
def doubled(x: torch.Tensor, scale: float = 2.0) -> torch.Tensor:
    CALLS.append(x)
    return x * scale


@dataclass
class Out:
    y: torch.Tensor
    k: torch.Tensor


@pytest.fixture(autouse=True)
def _no_calls() -> None:
    CALLS.clear()


def key(*args: Any, **kwargs: Any) -> bytes:
    return digest("f", args, kwargs)


def test_the_same_value_is_computed_once_and_the_same_object_returned() -> None:
    with remembering():
        first = doubled(torch.arange(6.0).reshape(2, 3))
        again = doubled(torch.arange(6.0).reshape(2, 3))  # another tensor, the same value
        assert again is first and len(CALLS) == 1
        doubled(torch.arange(6.0).reshape(2, 3)[:, ::2])  # a strided view keys by its own values
        doubled(torch.arange(6.0).reshape(2, 3), scale=3.0)
        assert len(CALLS) == 3


def test_other_values_dtypes_shapes_and_types_give_other_keys() -> None:
    x = torch.arange(6.0)
    keys = {
        key(x),
        key(x + 1),
        key(x.double()),
        key(x.reshape(2, 3)),
        key(x.to(torch.bfloat16)),
        key(x[:0]),
        key(1),
        key(1.0),
        key(True),
        key("1"),
        key(None),
        key([1]),
        key((1,)),
        key({"a": 1}),
        key({"a": 2}),
        key(1, a=1),
        key(-0.0),
        key(0.0),
    }
    assert len(keys) == 18
    assert key({"a": x, "b": 2}) == key({"b": 2, "a": x.clone()})  # dict keys sorted
    assert digest("f", (x,), {}) != digest("g", (x,), {})  # the function's name is in the key


def test_outside_a_scope_nothing_is_kept() -> None:
    x = torch.ones(3)
    assert doubled(x) is not doubled(x) and len(CALLS) == 2
    with remembering():
        doubled(x)
    with remembering():  # a new scope starts empty
        doubled(x)
    assert len(CALLS) == 4


def test_a_nested_scope_shares_the_outer_store() -> None:
    x = torch.ones(3)
    with remembering():
        with remembering():
            first = doubled(x)
        with remembering():
            assert doubled(x) is first
        assert doubled(x) is first
    assert len(CALLS) == 1


def test_the_byte_budget_evicts_the_oldest() -> None:
    a, b, c = (torch.full((64,), float(i)) for i in range(3))  # each result holds 256 bytes
    with remembering(budget=600):
        doubled(a)
        doubled(b)
        doubled(c)  # 768 bytes > 600: a goes
        doubled(b)
        doubled(c)
        assert len(CALLS) == 3
        doubled(a)
        assert len(CALLS) == 4


def test_a_result_bytes_count_inside_containers_and_dataclasses() -> None:
    t = torch.zeros(4, dtype=torch.float64)  # 32 bytes
    assert tensor_bytes({"m": [Out(t, t.clone())], "s": ("words", t.clone())}) == 96
    assert tensor_bytes("no tensor") == 0


def test_an_argument_it_cannot_key_raises() -> None:
    with remembering(), pytest.raises(TypeError, match="type object"):
        doubled(object())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="type function"):
        key(lambda: 0)

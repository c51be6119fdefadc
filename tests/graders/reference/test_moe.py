"""graders/reference/moe.py: the explicit, token-by-token path and the vectorised one agree."""

from __future__ import annotations

import pytest
import torch

from graders.reference.moe import (
    kept_assignments,
    moe_layer,
    moe_layer_explicit,
    route,
    route_explicit,
    routed_multiply_adds,
)
from graders.sandbox.work_counter import counted_call


def _inputs(seed: int, T: int = 9, d: int = 6, f: int = 10, E: int = 5) -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(seed)
    return (
        torch.randn(T, d, generator=g),
        torch.randn(d, E, generator=g),
        torch.randn(E, d, f, generator=g) / d**0.5,
        torch.randn(E, d, f, generator=g) / d**0.5,
        torch.randn(E, f, d, generator=g) / f**0.5,
    )


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("renormalize", [True, False])
@pytest.mark.parametrize("capacity", [None, 1, 2])
def test_explicit_and_vectorised_layers_agree(seed: int, renormalize: bool, capacity: int | None) -> None:
    args = _inputs(seed)
    want = moe_layer_explicit(*args, 2, renormalize, capacity)
    assert torch.allclose(moe_layer(*args, 2, renormalize, capacity), want, atol=1e-5)


def test_route_ties_go_to_the_lower_index_in_both_paths() -> None:
    x = torch.tensor([[1.0, 1.0], [0.0, 1.0]])
    w = torch.tensor([[1.0, 0.0, 1.0, 2.0], [0.0, 1.0, 0.0, -1.0]])  # token 0: logits 1, 1, 1, 1
    for fn in (route, route_explicit):
        weights, experts = fn(x, w, 3, renormalize=False)
        assert experts.tolist() == [[0, 1, 2], [1, 0, 2]]
        assert torch.allclose(weights[0], torch.full((3,), 0.25))


def test_renormalised_weights_sum_to_one_and_raw_ones_do_not() -> None:
    x, w = _inputs(7)[:2]
    assert torch.allclose(route(x, w, 2)[0].sum(-1), torch.ones(9))
    assert (route(x, w, 2, renormalize=False)[0].sum(-1) < 1).all()


def test_capacity_keeps_the_first_assignments_by_token_index() -> None:
    experts = torch.tensor([[0, 1], [0, 2], [1, 0], [0, 1]])
    keep = kept_assignments(experts, 3, capacity=2)
    assert keep.tolist() == [[True, True], [True, True], [True, False], [False, False]]


def test_the_vectorised_layer_does_exactly_the_routed_work() -> None:
    args = _inputs(3, T=20, d=8, f=12, E=6)
    _, largest, madds = counted_call(moe_layer, args + (2,), {})
    assert madds == routed_multiply_adds(20, 8, 12, 6, 2) and largest == 20 * 8

"""Mixture-of-experts routing and the expert layer (moe-routing in shared/CONTRACT.md).

Top-k routing as Mixtral (arXiv:2401.04088) and DeepSeek-V2 (arXiv:2405.04434) do it: softmax over
all E experts' logits, keep the top_k most probable (ties to the lower index), renormalise the kept
probabilities (Mixtral) or not (DeepSeek-V2). With a capacity, as in GShard (arXiv:2006.16668) and
Switch (arXiv:2101.03961), each expert takes its first `capacity` assignments, here by token index.

Two paths, tested against each other: `*_explicit` walks tokens and experts in Python, as the
contract reads; the vectorised path runs each expert once on exactly its tokens (what a solution
should do: the routed work, never every expert on every token).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def route(
    x: torch.Tensor, w_router: torch.Tensor, top_k: int, renormalize: bool = True
) -> tuple[torch.Tensor, torch.Tensor]:
    """x (T, d), w_router (d, E) -> (weights (T, top_k) float32, experts (T, top_k) int64)."""
    probs = torch.softmax((x @ w_router).float(), dim=-1)  # (T, E)
    # A stable descending sort puts equal probabilities in index order: ties go to the lower index.
    order = torch.sort(probs, dim=-1, descending=True, stable=True).indices[:, :top_k]  # (T, top_k)
    weights = probs.gather(-1, order)
    if renormalize:
        weights = weights / weights.sum(dim=-1, keepdim=True)
    return weights, order


def expert(x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor, w_down: torch.Tensor) -> torch.Tensor:
    """One SwiGLU expert: (n, d) -> (n, d)."""
    return (F.silu(x @ w_gate) * (x @ w_up)) @ w_down


def kept_assignments(experts: torch.Tensor, n_experts: int, capacity: int | None) -> torch.Tensor:
    """(T, top_k) bool: which assignments an expert takes, its first `capacity` by token index."""
    if capacity is None:
        return torch.ones_like(experts, dtype=torch.bool)
    one_hot = F.one_hot(experts, n_experts)  # (T, top_k, E)
    # Token-major order: token t's assignments come after every assignment of tokens before t
    # (a token never picks one expert twice, so the slot order inside a token does not matter).
    seen_before = one_hot.flatten(0, 1).cumsum(0).view_as(one_hot) - one_hot  # (T, top_k, E)
    rank = (seen_before * one_hot).sum(-1)  # (T, top_k): how many earlier tokens the expert took
    return rank < capacity


def moe_layer(
    x: torch.Tensor,
    w_router: torch.Tensor,
    w_gate: torch.Tensor,
    w_up: torch.Tensor,
    w_down: torch.Tensor,
    top_k: int,
    renormalize: bool = True,
    capacity: int | None = None,
) -> torch.Tensor:
    """x (T, d) -> (T, d): each token's routed experts, weighted and summed."""
    weights, experts = route(x, w_router, top_k, renormalize)
    keep = kept_assignments(experts, w_router.shape[1], capacity)
    out = torch.zeros_like(x)
    for e in range(w_router.shape[1]):
        token, slot = ((experts == e) & keep).nonzero(as_tuple=True)  # this expert's tokens, in order
        if token.numel() == 0:
            continue
        y = expert(x[token], w_gate[e], w_up[e], w_down[e])  # (n_e, d): only its own tokens
        out.index_add_(0, token, y * weights[token, slot, None])  # index_add_ sums repeated rows
    return out


def route_explicit(
    x: torch.Tensor, w_router: torch.Tensor, top_k: int, renormalize: bool = True
) -> tuple[torch.Tensor, torch.Tensor]:
    """route, one token at a time, choosing the top_k by repeated arg-max (first index on ties)."""
    T, E = x.shape[0], w_router.shape[1]
    weights = torch.zeros(T, top_k)
    experts = torch.zeros(T, top_k, dtype=torch.long)
    for t in range(T):
        logits = [float((x[t] @ w_router[:, e]).item()) for e in range(E)]
        probs = torch.softmax(torch.tensor(logits, dtype=torch.float32), dim=0).tolist()
        left = list(range(E))
        for j in range(top_k):
            best = max(left, key=lambda e: (probs[e], -e))  # highest, then lowest index
            left.remove(best)
            experts[t, j], weights[t, j] = best, probs[best]
        if renormalize:
            weights[t] = weights[t] / weights[t].sum()
    return weights, experts


def moe_layer_explicit(
    x: torch.Tensor,
    w_router: torch.Tensor,
    w_gate: torch.Tensor,
    w_up: torch.Tensor,
    w_down: torch.Tensor,
    top_k: int,
    renormalize: bool = True,
    capacity: int | None = None,
) -> torch.Tensor:
    """moe_layer token by token: each assignment in token order, an expert's count kept as it goes."""
    weights, experts = route_explicit(x, w_router, top_k, renormalize)
    taken = [0] * w_router.shape[1]
    out = torch.zeros_like(x)
    for t in range(x.shape[0]):
        for j in range(top_k):
            e = int(experts[t, j])
            if capacity is not None and taken[e] >= capacity:
                continue  # over capacity: this assignment contributes nothing
            taken[e] += 1
            out[t] += weights[t, j] * expert(x[t : t + 1], w_gate[e], w_up[e], w_down[e])[0]
    return out


def routed_multiply_adds(T: int, d: int, f: int, n_experts: int, top_k: int) -> int:
    """The contract's routed work: three (d x f) products per assignment, plus the router."""
    return T * top_k * 3 * d * f + T * d * n_experts

"""moe-routing's known mistakes: the sentences the diagnosis names, and what a route or an MoE layer
returns with each of them (graders/checks/moe_routing.py compares a wrong answer with these to
name the mistake).
"""

from __future__ import annotations

from functools import partial
from typing import Any

import torch
import torch.nn.functional as F

from graders.checks import moe_routing_cpu
from graders.checks.report import close
from graders.reference.moe import expert, kept_assignments, route

LayerArgs = tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]  # x and the weights
TOPK_SOFTMAX = (
    "the weights are renormalised although renormalize=False: with it, each weight is the expert's "
    "probability over all E experts (DeepSeek-V2), not a softmax over only the top-k logits"
)
NOT_RENORMALISED = (
    "the weights are not renormalised: with renormalize=True (Mixtral) the top-k probabilities are "
    "divided by their sum"
)
LOGITS = "the weights are the router's logits, not softmax probabilities"
TIES_HIGHER = (
    "ties are not broken toward the lower expert index: equal probabilities must come in index order "
    "(torch.topk promises no order for equal values; a stable descending sort keeps it)"
)
ASCENDING = "the experts are in expert-index order, not in descending probability"
LOWEST = "the least probable experts are chosen, not the most probable"
GATE_UP_SWAPPED = (
    "silu is applied to the up projection: an expert is (silu(x @ w_gate) * (x @ w_up)) @ w_down"
)
UNWEIGHTED = "the experts' outputs are summed without their routing weights"
LAST_WRITE_WINS = (
    "a token's second expert overwrites its first: out[idx] += y keeps one write per repeated row; "
    "use index_add_ so that the outputs of every expert a token is routed to are summed"
)
CAPACITY_IGNORED = "capacity is ignored: an expert takes at most `capacity` of its assignments"
CAPACITY_BY_SLOT = (
    "capacity is filled slot by slot (every token's first choice before any second choice): the "
    "contract fills it first come by token index"
)
CAPACITY_RENORMALISED = (
    "the weights are renormalised again after the drops: a dropped assignment contributes nothing and "
    "the others keep their weights"
)
DENSE = "runs every expert on every token"
TOO_MUCH_WORK = "does more matrix work than the routed tokens need"
KNOWN_MISTAKES = (
    TOPK_SOFTMAX,
    NOT_RENORMALISED,
    LOGITS,
    TIES_HIGHER,
    ASCENDING,
    LOWEST,
    GATE_UP_SWAPPED,
    UNWEIGHTED,
    LAST_WRITE_WINS,
    CAPACITY_IGNORED,
    CAPACITY_BY_SLOT,
    CAPACITY_RENORMALISED,
    DENSE,
    moe_routing_cpu.DENSE_CPU,
)


def _order(probs: torch.Tensor, top_k: int, rule: str) -> torch.Tensor:
    E = probs.shape[-1]
    if rule == "ties_higher":  # flip the experts, sort stably, flip the indices back
        return E - 1 - torch.sort(probs.flip(-1), dim=-1, descending=True, stable=True).indices[:, :top_k]
    if rule == "lowest":
        return torch.sort(probs, dim=-1, stable=True).indices[:, :top_k]
    chosen = torch.sort(probs, dim=-1, descending=True, stable=True).indices[:, :top_k]
    return chosen.sort(-1).values if rule == "ascending" else chosen


def route_variant(
    x: torch.Tensor, w: torch.Tensor, top_k: int, renormalize: bool, *, rule: str = "right", weights: str = ""
) -> tuple[torch.Tensor, torch.Tensor]:
    logits = (x @ w).float()
    probs = torch.softmax(logits, dim=-1)
    experts = _order(probs, top_k, rule)
    source = logits if weights == "logits" else probs
    picked = source.gather(-1, experts)
    norm = {"always": True, "never": False, "logits": False}.get(weights, renormalize)
    return (picked / picked.sum(-1, keepdim=True) if norm else picked), experts


def route_variants(x: torch.Tensor, w: torch.Tensor, top_k: int, renormalize: bool) -> list[tuple[str, Any]]:
    run = partial(route_variant, x, w, top_k, renormalize)
    out = [
        (TIES_HIGHER, run(rule="ties_higher")),
        (ASCENDING, run(rule="ascending")),
        (LOWEST, run(rule="lowest")),
        (LOGITS, run(weights="logits")),
    ]
    out.append(
        (TOPK_SOFTMAX, run(weights="always")) if not renormalize else (NOT_RENORMALISED, run(weights="never"))
    )
    return out


def layer_variant(
    x: torch.Tensor,
    w_router: torch.Tensor,
    w_gate: torch.Tensor,
    w_up: torch.Tensor,
    w_down: torch.Tensor,
    top_k: int,
    renormalize: bool,
    capacity: int | None,
    *,
    mistake: str = "",
) -> torch.Tensor:
    """moe_layer with one known mistake (float64 from the same inputs)."""
    norm = renormalize if mistake not in (TOPK_SOFTMAX, NOT_RENORMALISED) else mistake == TOPK_SOFTMAX
    weights, experts = route(x, w_router, top_k, norm)
    weights = weights.double()
    x64, g, u, dn = x.double(), w_gate.double(), w_up.double(), w_down.double()
    E = w_router.shape[1]
    if mistake == CAPACITY_IGNORED or capacity is None:
        keep = torch.ones_like(experts, dtype=torch.bool)
    elif mistake == CAPACITY_BY_SLOT:  # slot-major order: every first choice, then every second
        keep = kept_assignments(experts.T.contiguous(), E, capacity).T
    else:
        keep = kept_assignments(experts, E, capacity)
    if mistake == CAPACITY_RENORMALISED:
        kept = weights * keep
        weights = kept / kept.sum(-1, keepdim=True).clamp_min(1e-30)
    if mistake == UNWEIGHTED:
        weights = torch.ones_like(weights)
    out = torch.zeros_like(x64)
    for e in range(E):
        token, slot = ((experts == e) & keep).nonzero(as_tuple=True)
        if token.numel() == 0:
            continue
        if mistake == GATE_UP_SWAPPED:
            y = (F.silu(x64[token] @ u[e]) * (x64[token] @ g[e])) @ dn[e]
        else:
            y = expert(x64[token], g[e], u[e], dn[e])
        y = y * weights[token, slot, None]
        out.index_add_(0, token, y)
    return out


def layer_variants(
    args: LayerArgs, top_k: int, renormalize: bool, capacity: int | None
) -> list[tuple[str, torch.Tensor]]:
    names = [
        GATE_UP_SWAPPED,
        UNWEIGHTED,
        TOPK_SOFTMAX if not renormalize else NOT_RENORMALISED,
    ]
    if capacity is not None:
        names += [CAPACITY_IGNORED, CAPACITY_BY_SLOT, CAPACITY_RENORMALISED]
    return [(n, layer_variant(*args, top_k, renormalize, capacity, mistake=n)) for n in names]


def one_write_per_row(
    got: torch.Tensor, args: LayerArgs, top_k: int, renormalize: bool, capacity: int | None
) -> bool:
    """Every token routed to two experts or more got exactly one of its weighted expert outputs."""
    x, w_router, w_gate, w_up, w_down = args
    weights, experts = route(x, w_router, top_k, renormalize)
    keep = kept_assignments(experts, w_router.shape[1], capacity)
    many = 0
    for t in range(x.shape[0]):
        parts = [
            weights[t, j] * expert(x[t : t + 1], w_gate[e], w_up[e], w_down[e])[0]
            for j, e in enumerate(experts[t].tolist())
            if keep[t, j]
        ]
        if len(parts) < 2:
            continue
        many += 1
        if not any(close(got[t], p) for p in parts):
            return False
    return many > 0

# expect: failed
# diagnosis: capacity is filled slot by slot
# GShard-style priority: every first choice is served before any second choice.
import torch
import torch.nn.functional as F


def route(x, w_router, top_k, renormalize=True):
    probs = torch.softmax((x @ w_router).float(), dim=-1)
    experts = torch.sort(probs, dim=-1, descending=True, stable=True).indices[:, :top_k]
    weights = probs.gather(-1, experts)
    if renormalize:
        weights = weights / weights.sum(dim=-1, keepdim=True)
    return weights, experts


def swiglu(h, g, u, dn):
    return (F.silu(h @ g) * (h @ u)) @ dn


def moe_layer(x, w_router, w_gate, w_up, w_down, top_k, renormalize=True, capacity=None):
    weights, experts = route(x, w_router, top_k, renormalize)
    out = torch.zeros_like(x)
    for e in range(w_router.shape[1]):
        slot, token = (experts.T == e).nonzero(as_tuple=True)  # the mistake: slot-major order
        if capacity is not None:
            slot, token = slot[:capacity], token[:capacity]
        out.index_add_(0, token, swiglu(x[token], w_gate[e], w_up[e], w_down[e]) * weights[token, slot, None])
    return out

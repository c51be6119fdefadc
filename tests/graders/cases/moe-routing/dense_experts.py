# expect: failed
# diagnosis: runs every expert on every token
# Right numbers, dense work: every expert on every token, then the routing weights as a mask.
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
    T, E = x.shape[0], w_router.shape[1]
    dense = torch.zeros(T, E)
    for e in range(E):
        token, slot = (experts == e).nonzero(as_tuple=True)
        if capacity is not None:
            token, slot = token[:capacity], slot[:capacity]
        dense[token, e] = weights[token, slot]
    out = torch.zeros_like(x)
    for e in range(E):
        out += dense[:, e, None] * swiglu(x, w_gate[e], w_up[e], w_down[e])  # all T tokens, every expert
    return out

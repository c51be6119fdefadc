# expect: failed
# diagnosis: the weights are renormalised again after the drops
# After the capacity drops, the kept weights of each token are divided by their sum again.
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
    keep = torch.ones_like(experts, dtype=torch.bool)
    for e in range(w_router.shape[1]):
        token, slot = (experts == e).nonzero(as_tuple=True)
        if capacity is not None:
            keep[token[capacity:], slot[capacity:]] = False
    weights = weights * keep
    weights = weights / weights.sum(-1, keepdim=True).clamp_min(1e-30)  # the mistake
    out = torch.zeros_like(x)
    for e in range(w_router.shape[1]):
        token, slot = ((experts == e) & keep).nonzero(as_tuple=True)
        out.index_add_(0, token, swiglu(x[token], w_gate[e], w_up[e], w_down[e]) * weights[token, slot, None])
    return out

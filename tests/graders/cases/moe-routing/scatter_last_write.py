# expect: failed
# diagnosis: a token's second expert overwrites its first
# Every assignment at once with out[tokens] += y: repeated rows keep one write, not the sum.
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
    T = x.shape[0]
    tokens, ys = [], []
    for e in range(w_router.shape[1]):
        token, slot = (experts == e).nonzero(as_tuple=True)
        if capacity is not None:
            token, slot = token[:capacity], slot[:capacity]
        tokens.append(token)
        ys.append(swiglu(x[token], w_gate[e], w_up[e], w_down[e]) * weights[token, slot, None])
    out = torch.zeros(T, x.shape[1])
    out[torch.cat(tokens)] += torch.cat(ys)  # the mistake: duplicates are not accumulated
    return out

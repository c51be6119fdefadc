# Every expert on every token, and the in-process multiply-add counter replaced so that it reports
# a tenth of the routed work: the CPU time the kernel counts for the process still shows the
# dense work (graders/checks/moe_routing_cpu.py).
# expect: failed
# diagnosis: runs every expert on every token (by the CPU time its process used)
# outside-only: it patches the in-process counter the in-process harness relies on
import sys

import torch
import torch.nn.functional as F

_runtime = sys.modules["graders.sandbox.runtime"]
_runtime.counted_call = lambda fn, args, kwargs: (fn(*args, **kwargs), 0, 1)


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

# expect: passed
# A different style: tokens sorted by expert once, one contiguous slice per expert, einsum for
# the products, and topk on negated indices for the tie rule.
import torch
import torch.nn.functional as F


def route(x, w_router, top_k, renormalize=True):
    probs = torch.softmax(torch.einsum("td,de->te", x, w_router).float(), dim=-1)
    E = probs.shape[-1]
    # rank by (probability, -index): a key that breaks ties toward the lower index
    order = torch.argsort(-probs, dim=-1, stable=True)[:, :top_k]
    weights = torch.gather(probs, 1, order)
    if renormalize:
        weights = weights / weights.sum(-1, keepdim=True)
    assert order.max() < E
    return weights, order


def moe_layer(x, w_router, w_gate, w_up, w_down, top_k, renormalize=True, capacity=None):
    weights, experts = route(x, w_router, top_k, renormalize)
    T, k = experts.shape
    flat = experts.reshape(-1)
    token = torch.arange(T).repeat_interleave(k)
    w = weights.reshape(-1)
    order = torch.argsort(flat, stable=True)  # by expert, token order kept within an expert
    flat, token, w = flat[order], token[order], w[order]
    counts = torch.bincount(flat, minlength=w_router.shape[1]).tolist()
    out = torch.zeros_like(x)
    start = 0
    for e, n in enumerate(counts):
        t, ww = token[start : start + n], w[start : start + n]
        start += n
        if capacity is not None:
            t, ww = t[:capacity], ww[:capacity]
        if t.numel() == 0:
            continue
        h = x[t]
        y = torch.einsum("nf,fd->nd", F.silu(torch.einsum("nd,df->nf", h, w_gate[e])) * (h @ w_up[e]), w_down[e])
        out.index_add_(0, t, y * ww[:, None])
    return out

# expect: failed
# diagnosis: the least probable experts are chosen
# Sorts ascending: the top_k least probable experts.
import torch
import torch.nn.functional as F


def route(x, w_router, top_k, renormalize=True):
    """x (T, d), w_router (d, E) -> (weights (T, top_k), experts (T, top_k) LongTensor)."""
    probs = torch.softmax((x @ w_router).float(), dim=-1)  # (T, E): over ALL experts
    # A stable descending sort keeps equal probabilities in index order: ties to the lower index.
    # (torch.topk promises nothing about which of two equal values comes first.)
    experts = torch.sort(probs, dim=-1, descending=False, stable=True).indices[:, :top_k]
    weights = probs.gather(-1, experts)  # (T, top_k), already in descending order
    if renormalize:  # Mixtral; the same as a softmax over only the top-k logits
        weights = weights / weights.sum(dim=-1, keepdim=True)
    return weights, experts  # DeepSeek-V2 keeps the probabilities over all E as they are


def moe_layer(x, w_router, w_gate, w_up, w_down, top_k, renormalize=True, capacity=None):
    """x (T, d) -> (T, d): the weighted sum of each token's routed SwiGLU experts."""
    weights, experts = route(x, w_router, top_k, renormalize)
    out = torch.zeros_like(x)
    for e in range(w_router.shape[1]):
        # (token, slot) pairs routed to e, in token order: nonzero walks the rows in order.
        token, slot = (experts == e).nonzero(as_tuple=True)
        if capacity is not None:
            token, slot = token[:capacity], slot[:capacity]  # first come by token index; the rest drop
        if token.numel() == 0:
            continue
        h = x[token]  # (n_e, d): only this expert's tokens, so the work is the routed work
        y = (F.silu(h @ w_gate[e]) * (h @ w_up[e])) @ w_down[e]  # (n_e, d)
        # index_add_ sums into the rows; a token routed to several experts collects them all.
        out.index_add_(0, token, y * weights[token, slot, None])
    return out

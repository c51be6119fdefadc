# expect: passed
# A correct variant: filters as -inf on the logits, a softmax at the end, searchsorted for the draw.
import torch


def filter_probs(logits, temperature=1.0, top_k=0, top_p=1.0):
    if temperature < 0:
        raise ValueError("temperature < 0")
    if top_k < 0:
        raise ValueError("top_k < 0")
    if top_p <= 0 or top_p > 1:
        raise ValueError("top_p outside (0, 1]")
    V = logits.shape[-1]
    if temperature == 0:
        out = torch.zeros_like(logits)
        out.scatter_(-1, logits.argmax(-1, keepdim=True), 1.0)
        return out
    z = logits / temperature
    values, order = torch.sort(z, dim=-1, descending=True, stable=True)
    if 0 < top_k < V:
        values[:, top_k:] = float("-inf")
    if top_p < 1:
        p = values.softmax(-1)
        drop = p.cumsum(-1) - p >= top_p
        values = values.masked_fill(drop, float("-inf"))
    filtered = torch.full_like(z, float("-inf")).scatter(-1, order, values)
    return filtered.softmax(-1)


def sample(logits, u, temperature=1.0, top_k=0, top_p=1.0):
    cdf = filter_probs(logits, temperature, top_k, top_p).cumsum(-1)
    idx = torch.searchsorted(cdf, u[:, None].to(cdf.dtype), right=True)[:, 0]
    return idx.clamp(max=logits.shape[-1] - 1).long()

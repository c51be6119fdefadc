# expect: failed
# diagnosis: splits the mass between tied logits
# Greedy shares the mass among ties.
import torch


def _check(temperature, top_k, top_p):
    if temperature < 0:
        raise ValueError(f"temperature must be >= 0, got {temperature}")
    if top_k < 0:
        raise ValueError(f"top_k must be >= 0 (0 keeps every token), got {top_k}")
    if not 0 < top_p <= 1:
        raise ValueError(f"top_p must be in (0, 1], got {top_p}")


def filter_probs(logits, temperature=1.0, top_k=0, top_p=1.0):
    """logits (B, V) -> probabilities (B, V): temperature, then top-k, then top-p, renormalised."""
    _check(temperature, top_k, top_p)
    B, V = logits.shape
    if temperature == 0:
        # Greedy: dividing by 0 is not a limit we can compute, so take it literally.
        # argmax returns the first maximum, which is the lowest index on ties.
        top = logits == logits.amax(dim=-1, keepdim=True)
        return top.to(logits.dtype) / top.sum(dim=-1, keepdim=True)

    probs = torch.softmax(logits / temperature, dim=-1)  # (B, V)
    # "Most probable first, ties to the lower index": a stable descending sort keeps equal
    # values in index order (torch.topk makes no such promise).
    order = torch.sort(probs, dim=-1, descending=True, stable=True).indices  # (B, V)

    if 0 < top_k < V:
        keep = torch.zeros_like(probs, dtype=torch.bool).scatter_(-1, order[:, :top_k], True)
        probs = torch.where(keep, probs, torch.zeros_like(probs))
        probs = probs / probs.sum(dim=-1, keepdim=True)  # top-p reads these renormalised values

    if top_p < 1.0:
        sorted_probs = probs.gather(-1, order)  # (B, V), descending
        mass_before = sorted_probs.cumsum(dim=-1) - sorted_probs  # (B, V)
        # Keep a token while the mass before it is below top_p: the token that crosses the
        # threshold stays, and the first token always does.
        keep_sorted = mass_before < top_p
        keep = torch.zeros_like(keep_sorted).scatter_(-1, order, keep_sorted)  # vocabulary order
        probs = torch.where(keep, probs, torch.zeros_like(probs))

    return probs / probs.sum(dim=-1, keepdim=True)  # (B, V)


def sample(logits, u, temperature=1.0, top_k=0, top_p=1.0):
    """logits (B, V), u (B,) in [0, 1) -> LongTensor (B,)."""
    probs = filter_probs(logits, temperature, top_k, top_p)  # (B, V)
    cdf = probs.cumsum(dim=-1)  # (B, V), in vocabulary order
    above = cdf > u.unsqueeze(-1)  # (B, V); a filtered token adds 0, so it is never the first True
    # argmax returns the first True. Rounding can leave cdf[-1] a hair under 1, so a row
    # with no True falls back to its last token with mass.
    last = (probs > 0).to(torch.int64).cumsum(dim=-1).argmax(dim=-1)  # (B,)
    first = above.to(torch.int8).argmax(dim=-1)  # (B,)
    return torch.where(above.any(dim=-1), first, last).to(torch.int64)

import torch


def filter_probs(logits, temperature=1.0, top_k=0, top_p=1.0):
    """logits (B, V) -> probabilities (B, V): temperature, then top-k, then top-p, renormalised."""
    raise NotImplementedError


def sample(logits, u, temperature=1.0, top_k=0, top_p=1.0):
    """logits (B, V), u (B,) in [0, 1) -> LongTensor (B,): the smallest t with cumsum(probs)[t] > u."""
    raise NotImplementedError

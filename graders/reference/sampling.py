"""Temperature, top-k and top-p filtering, then inverse-CDF sampling (the sampling challenge).

In this order, per row of logits (B, V):
  1. temperature: logits / temperature; 0 means greedy (all mass on the highest logit,
     the lowest index on ties);
  2. top-k: keep the k highest (0 keeps all; ties at the k-th value go to the lower index);
  3. top-p: over the probabilities renormalised among what top-k kept, keep the smallest set
     of the most probable tokens (descending, ties to the lower index) whose mass reaches
     top_p, never fewer than one (this is how Hugging Face transformers and vLLM do it);
  4. renormalise.
`sample` then takes, per row, the smallest index t with cumsum(probs)[t] > u, the cumulative
sum running in vocabulary order (not in sorted order).

Two paths: `filter_probs` (vectorised, one stable sort per row) and `filter_row` (plain Python
over one row); tests/graders/reference checks them against each other.
"""

from __future__ import annotations

import math

import torch


def check_arguments(temperature: float, top_k: int, top_p: float) -> None:
    if temperature < 0:
        raise ValueError(f"temperature={temperature} is negative")
    if top_k < 0:
        raise ValueError(f"top_k={top_k} is negative (0 keeps every token)")
    if not 0 < top_p <= 1:
        raise ValueError(f"top_p={top_p} is outside (0, 1]")


def descending_order(x: torch.Tensor) -> torch.Tensor:
    """(B, V) -> (B, V) indices by descending value, ties to the lower index (a stable sort)."""
    return torch.sort(x, dim=-1, descending=True, stable=True).indices


def filter_probs(
    logits: torch.Tensor, temperature: float = 1.0, top_k: int = 0, top_p: float = 1.0
) -> torch.Tensor:
    """logits (B, V) -> probabilities (B, V), each row summing to 1."""
    check_arguments(temperature, top_k, top_p)
    B, V = logits.shape
    if temperature == 0:
        greedy = logits.argmax(dim=-1)  # (B,): the first maximum on ties
        return torch.nn.functional.one_hot(greedy, V).to(logits.dtype)  # (B, V)
    probs = torch.softmax(logits / temperature, dim=-1)  # (B, V)
    order = descending_order(probs)  # (B, V)
    rank = torch.empty_like(order).scatter_(-1, order, torch.arange(V).expand(B, V))  # (B, V)
    if 0 < top_k < V:
        probs = torch.where(rank < top_k, probs, torch.zeros_like(probs))
        probs = probs / probs.sum(dim=-1, keepdim=True)  # renormalised among the k kept
    if top_p < 1.0:
        sorted_probs = probs.gather(-1, order)  # (B, V), descending
        before = sorted_probs.cumsum(dim=-1) - sorted_probs  # (B, V): mass of the tokens ahead
        keep_sorted = before < top_p  # the token that crosses top_p is kept; the first always
        keep = keep_sorted.gather(-1, rank)  # (B, V), back in vocabulary order
        probs = torch.where(keep, probs, torch.zeros_like(probs))
    return probs / probs.sum(dim=-1, keepdim=True)  # (B, V)


def filter_row(
    logits: list[float], temperature: float = 1.0, top_k: int = 0, top_p: float = 1.0
) -> list[float]:
    """The explicit path for one row, in Python floats (double precision)."""
    check_arguments(temperature, top_k, top_p)
    V = len(logits)
    if temperature == 0:
        best = max(range(V), key=lambda i: (logits[i], -i))  # highest, lowest index on ties
        return [1.0 if i == best else 0.0 for i in range(V)]
    scaled = [x / temperature for x in logits]
    top = max(scaled)
    weights = [math.exp(x - top) for x in scaled]
    total = sum(weights)
    probs = [w / total for w in weights]
    order = sorted(range(V), key=lambda i: (-probs[i], i))
    kept = set(order[:top_k]) if 0 < top_k < V else set(range(V))
    probs = [p if i in kept else 0.0 for i, p in enumerate(probs)]
    total = sum(probs)
    probs = [p / total for p in probs]
    if top_p < 1.0:
        mass, nucleus = 0.0, set()
        for i in order:
            if mass >= top_p:
                break
            nucleus.add(i)
            mass += probs[i]
        probs = [p if i in nucleus else 0.0 for i, p in enumerate(probs)]
    total = sum(probs)
    return [p / total for p in probs]


def inverse_cdf(probs: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """probs (B, V), u (B,) -> (B,) int64: the smallest t with cumsum(probs[b])[t] > u[b]."""
    cdf = probs.cumsum(dim=-1)  # (B, V), vocabulary order
    above = cdf > u.unsqueeze(-1)  # (B, V)
    # argmax finds the first True; a row whose cdf never passes u (rounding) takes its last
    # token with mass.
    last = (probs > 0).to(torch.int64).cumsum(-1).argmax(-1)  # (B,)
    return torch.where(above.any(-1), above.to(torch.int8).argmax(-1), last).to(torch.int64)


def sample(
    logits: torch.Tensor, u: torch.Tensor, temperature: float = 1.0, top_k: int = 0, top_p: float = 1.0
) -> torch.Tensor:
    """logits (B, V), u (B,) uniform in [0, 1) -> LongTensor (B,)."""
    return inverse_cdf(filter_probs(logits, temperature, top_k, top_p), u)

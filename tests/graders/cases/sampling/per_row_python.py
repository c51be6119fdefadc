# expect: passed
# A correct variant: one row at a time, sorted() with an explicit tie rule, Python sums.
import math

import torch


def _check(temperature, top_k, top_p):
    if temperature < 0 or top_k < 0 or not (0 < top_p <= 1):
        raise ValueError(f"bad arguments: temperature={temperature}, top_k={top_k}, top_p={top_p}")


def _row(logits, temperature, top_k, top_p):
    V = len(logits)
    if temperature == 0:
        best = max(range(V), key=lambda i: (logits[i], -i))
        return [1.0 if i == best else 0.0 for i in range(V)]
    scaled = [x / temperature for x in logits]
    top = max(scaled)
    weights = [math.exp(x - top) for x in scaled]
    order = sorted(range(V), key=lambda i: (-weights[i], i))
    kept = order[:top_k] if 0 < top_k < V else order
    total = sum(weights[i] for i in kept)
    probs = {i: weights[i] / total for i in kept}
    if top_p < 1:
        nucleus, mass = [], 0.0
        for i in kept:
            if mass >= top_p:
                break
            nucleus.append(i)
            mass += probs[i]
        kept = nucleus
    total = sum(probs[i] for i in kept)
    return [probs[i] / total if i in kept else 0.0 for i in range(V)]


def filter_probs(logits, temperature=1.0, top_k=0, top_p=1.0):
    _check(temperature, top_k, top_p)
    rows = [_row(r, temperature, top_k, top_p) for r in logits.tolist()]
    return torch.tensor(rows, dtype=logits.dtype)


def sample(logits, u, temperature=1.0, top_k=0, top_p=1.0):
    probs = filter_probs(logits, temperature, top_k, top_p).tolist()
    out = []
    for row, x in zip(probs, u.tolist()):
        total, pick = 0.0, max(i for i, p in enumerate(row) if p > 0)
        for i, p in enumerate(row):
            total += p
            if total > x:
                pick = i
                break
        out.append(pick)
    return torch.tensor(out, dtype=torch.long)

"""Beam search on a model with a cache, as shared/CONTRACT.md's `beam-search` states it.

The model has `prefill(prompt) -> (log_probs (V,), cache)`, `step(tokens (N,), cache) ->
(log_probs (N, V), cache)` and `reorder(cache, rows (N',)) -> cache` (new row i is old row
rows[i]): Hugging Face's `_reorder_cache` / vLLM's block-table fork, reduced to one call.

One position of the search, from live beams b with summed log-probabilities s_b:
  1. every (b, t) proposes s_b + log_probs[b, t];
  2. the proposals are sorted highest first, ties to the lower b, then the lower t;
  3. walking down that list, an eos proposal whose rank is below beam_width finishes a hypothesis
     (an eos further down is dropped: Hugging Face's `beam_token_rank >= num_beams` rule), any
     other token becomes a live beam, until beam_width live beams are chosen;
  4. the search stops once beam_width hypotheses have finished. At the end the live beams join the
     finished ones (Hugging Face's early_stopping=True drops them; this contract keeps them), and
     each is scored by its sum over n ** length_penalty, n its generated tokens (eos included)
     (Wu et al., 2016, arXiv:1609.08144, use ((5 + n) / 6) ** alpha; HF's BeamSearchScorer uses n).

Two walks of step 2-3 are kept and tested against each other (tests/graders/reference/
test_beam_search.py): `walk_explicit` builds and sorts Python tuples, `walk_vectorised` adds the
scores as a (N, V) tensor and takes one stable descending sort of its flat view (flat index
b * V + t, so a stable sort breaks ties exactly as the rule does).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import torch

Hypothesis = tuple[list[int], float]
Chosen = list[tuple[int, int, float]]  # live beams: (parent b, token t, summed log-prob)
Finished = list[tuple[int, float]]  # finished here: (parent b, summed log-prob with eos)


class CachedModel(Protocol):
    def prefill(self, prompt: list[int]) -> tuple[torch.Tensor, Any]: ...

    def step(self, tokens: torch.Tensor, cache: Any) -> tuple[torch.Tensor, Any]: ...

    def reorder(self, cache: Any, rows: torch.Tensor) -> Any: ...


@dataclass(frozen=True)
class Beam:
    tokens: tuple[int, ...]  # generated so far (the prompt not included)
    score: float  # summed log-probability


def walk_explicit(
    scores: Sequence[float], log_probs: torch.Tensor, beam_width: int, eos_id: int | None
) -> tuple[Chosen, Finished]:
    """Steps 2-3 with Python tuples; log_probs (N, V), scores (N,)."""
    N, V = log_probs.shape
    rows = log_probs.double().tolist()
    proposals = [(scores[b] + rows[b][t], b, t) for b in range(N) for t in range(V)]
    proposals.sort(key=lambda p: (-p[0], p[1], p[2]))
    live: Chosen = []
    done: Finished = []
    for rank, (score, b, t) in enumerate(proposals):
        if t == eos_id:
            if rank < beam_width:
                done.append((b, score))
            continue
        live.append((b, t, score))
        if len(live) == beam_width:
            break
    return live, done


def walk_vectorised(
    scores: Sequence[float], log_probs: torch.Tensor, beam_width: int, eos_id: int | None
) -> tuple[Chosen, Finished]:
    """Steps 2-3 with one stable sort; log_probs (N, V), scores (N,)."""
    N, V = log_probs.shape
    total = torch.tensor(scores, dtype=torch.float64)[:, None] + log_probs.double()  # (N, V)
    flat = total.reshape(-1)  # (N * V,): index b * V + t
    order = torch.sort(flat, descending=True, stable=True).indices  # ties: lower b, then lower t
    head = order[: beam_width + N]  # each beam has one eos: beam_width live beams lie within this
    parent, token = head // V, head % V
    rank = torch.arange(head.numel())
    is_eos = token == eos_id if eos_id is not None else torch.zeros_like(token, dtype=torch.bool)
    finish = (is_eos & (rank < beam_width)).nonzero().flatten()
    keep = (~is_eos).nonzero().flatten()[:beam_width]
    done = [(int(parent[i]), float(flat[head[i]])) for i in finish]
    live = [(int(parent[i]), int(token[i]), float(flat[head[i]])) for i in keep]
    return live, done


def final_score(score: float, n_generated: int, length_penalty: float) -> float:
    return score / n_generated**length_penalty


def beam_search(
    model: CachedModel,
    prompt: Sequence[int],
    beam_width: int,
    max_new_tokens: int,
    eos_id: int | None = None,
    length_penalty: float = 1.0,
    *,
    explicit: bool = False,
) -> list[Hypothesis]:
    """Up to beam_width hypotheses (prompt + generated tokens, final score), best first."""
    if beam_width < 1:
        raise ValueError(f"beam_width={beam_width} must be at least 1")
    if max_new_tokens < 1:
        raise ValueError(f"max_new_tokens={max_new_tokens} must be at least 1")
    walk = walk_explicit if explicit else walk_vectorised
    log_probs, cache = model.prefill(list(prompt))
    log_probs = log_probs.reshape(1, -1)  # (1, V): one beam, the prompt
    beams = [Beam((), 0.0)]
    finished: list[Beam] = []  # in the order they finished
    parents: list[int] = []
    for position in range(max_new_tokens):
        if position > 0:
            cache = model.reorder(cache, torch.tensor(parents, dtype=torch.long))  # (N,) parent rows
            last = torch.tensor([b.tokens[-1] for b in beams], dtype=torch.long)  # (N,)
            log_probs, cache = model.step(last, cache)  # (N, V)
        live, done = walk([b.score for b in beams], log_probs, beam_width, eos_id)
        finished += [Beam(beams[b].tokens + (eos_id,), s) for b, s in done]  # type: ignore[operator]
        parents = [b for b, _, _ in live]
        beams = [Beam(beams[b].tokens + (t,), s) for b, t, s in live]
        if len(finished) >= beam_width:
            break
    pool = finished + beams  # live beams join after every finished one (ties: the earlier finished)
    scored = [(final_score(h.score, len(h.tokens), length_penalty), i, h) for i, h in enumerate(pool)]
    scored.sort(key=lambda x: (-x[0], x[1]))
    return [([*prompt, *h.tokens], s) for s, _, h in scored[:beam_width]]

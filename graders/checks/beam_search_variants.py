"""beam-search's named mistakes, each one rule of the search broken, run on the grader's model.

`search(model, ..., slip)` is the search written plainly (Python lists, one loop per rule) with
at most one `Slip`; `search(..., slip=None)` is the rule, written apart from graders/reference/
beam_search.py and tested equal to it. A variant runs on a fresh `HistoryModel` of the same seed
as the submission's, so the battery can compare everything the model saw: the hypotheses, the
prefill calls and the rows of every step (graders/checks/beam_search.py, `Observed`).
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum

import torch

from graders.checks.beam_search_model import HistoryModel


class Slip(Enum):
    """A named mistake: the value is the sentence the verdict says (its id is the name)."""

    DUPLICATE_START = (
        "the search starts from beam_width copies of the prompt, so its first step keeps the same "
        "hypothesis several times"
    )
    PER_BEAM_BEST = (
        "after the first position each beam extends only its own best token, instead of every "
        "beam's proposals competing in one sort"
    )
    TIES_REVERSED = "proposals with equal scores go to the higher beam and token, not the lower"
    NO_REORDER = (
        "the cache is never reordered to the chosen beams' parents after the first position, so a "
        "row's log-probs come from another beam's history"
    )
    PREFILL_AGAIN = (
        "prefill runs again on each beam's whole text at every position instead of stepping the cache"
    )
    EOS_ANY_RANK = "an eos proposal finishes a hypothesis at any rank, not only within the first beam_width"
    EOS_TAKES_SLOT = (
        "only the first beam_width proposals are walked, so each eos that finishes leaves one live beam fewer"
    )
    NO_EARLY_STOP = "the search goes on after beam_width hypotheses have finished"
    DROPS_LIVE = "the live beams are dropped at the end instead of joining the finished hypotheses"
    PENALTY_WITH_PROMPT = "the length penalty counts the prompt's tokens as well as the generated ones"
    PENALTY_WITHOUT_EOS = "the length penalty leaves the eos token out of the generated tokens"
    RANKS_BY_SUM = (
        "the hypotheses are ranked by their summed log-probability, not by the length-penalised score"
    )


def mistake_sentence(slip: Slip) -> str:
    return slip.value


Result = list[tuple[list[int], float]]


def _proposals(
    scores: Sequence[float], rows: list[list[float]], slip: Slip | None
) -> list[tuple[float, int, int]]:
    out = [(scores[b] + rows[b][t], b, t) for b in range(len(rows)) for t in range(len(rows[b]))]
    if slip is Slip.TIES_REVERSED:
        out.sort(key=lambda p: (p[0], p[1], p[2]), reverse=True)
    else:
        out.sort(key=lambda p: (-p[0], p[1], p[2]))
    return out


def _walk(
    proposals: list[tuple[float, int, int]], beam_width: int, eos_id: int | None, slip: Slip | None
) -> tuple[list[tuple[int, int, float]], list[tuple[int, float]]]:
    live: list[tuple[int, int, float]] = []
    done: list[tuple[int, float]] = []
    walked = proposals[:beam_width] if slip is Slip.EOS_TAKES_SLOT else proposals
    for rank, (score, b, t) in enumerate(walked):
        if t == eos_id:
            if rank < beam_width or slip is Slip.EOS_ANY_RANK:
                done.append((b, score))
            continue
        live.append((b, t, score))
        if len(live) == beam_width:
            break
    return live, done


def _per_beam(
    scores: Sequence[float], rows: list[list[float]], eos_id: int | None
) -> tuple[list[tuple[int, int, float]], list[tuple[int, float]]]:
    """PER_BEAM_BEST: each beam's own best proposal; an eos at its top finishes it."""
    live: list[tuple[int, int, float]] = []
    done: list[tuple[int, float]] = []
    for b, row in enumerate(rows):
        own = sorted(((scores[b] + v, t) for t, v in enumerate(row)), key=lambda p: (-p[0], p[1]))
        if own[0][1] == eos_id:
            done.append((b, own[0][0]))
        best = next((s, t) for s, t in own if t != eos_id)
        live.append((b, best[1], best[0]))
    return live, done


def search(
    model: HistoryModel,
    prompt: Sequence[int],
    beam_width: int,
    max_new_tokens: int,
    eos_id: int | None = None,
    length_penalty: float = 1.0,
    slip: Slip | None = None,
) -> Result:
    """The search with at most one rule broken, on `model` (which records what it was asked)."""
    prompt = list(prompt)
    lp, cache = model.prefill(prompt)
    rows = [lp.double().tolist()]
    beams: list[tuple[tuple[int, ...], float]] = [((), 0.0)]
    if slip is Slip.DUPLICATE_START:
        cache = model.reorder(cache, torch.zeros(beam_width, dtype=torch.long))
        beams, rows = beams * beam_width, rows * beam_width
    finished: list[tuple[tuple[int, ...], float]] = []
    parents: list[int] = []
    for position in range(max_new_tokens):
        if position > 0:
            last = torch.tensor([h[-1] for h, _ in beams], dtype=torch.long)
            if slip is Slip.PREFILL_AGAIN:
                rows = [model.prefill(prompt + list(h))[0].double().tolist() for h, _ in beams]
            else:
                if slip is not Slip.NO_REORDER or position == 1:
                    cache = model.reorder(cache, torch.tensor(parents, dtype=torch.long))
                lp, cache = model.step(last, cache)
                rows = lp.double().tolist()
        scores = [s for _, s in beams]
        if slip is Slip.PER_BEAM_BEST and position > 0:
            live, done = _per_beam(scores, rows, eos_id)
        else:
            live, done = _walk(_proposals(scores, rows, slip), beam_width, eos_id, slip)
        finished += [(beams[b][0] + (eos_id,), s) for b, s in done]  # type: ignore[operator]
        parents = [b for b, _, _ in live]
        beams = [(beams[b][0] + (t,), s) for b, t, s in live]
        if len(finished) >= beam_width and slip is not Slip.NO_EARLY_STOP:
            break
        if not beams:
            break
    pool = finished + ([] if slip is Slip.DROPS_LIVE else beams)
    scored = []
    for i, (tokens, s) in enumerate(pool):
        n = len(tokens)
        if slip is Slip.PENALTY_WITH_PROMPT:
            n += len(prompt)
        elif slip is Slip.PENALTY_WITHOUT_EOS and tokens and tokens[-1] == eos_id:
            n -= 1
        final = s / max(n, 1) ** length_penalty
        scored.append((s if slip is Slip.RANKS_BY_SUM else final, i, prompt + list(tokens), final))
    scored.sort(key=lambda x: (-x[0], x[1]))
    return [(tokens, final) for _, _, tokens, final in scored[:beam_width]]

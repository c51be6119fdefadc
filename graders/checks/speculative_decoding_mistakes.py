"""speculative-decoding's known mistakes: the sentences the diagnosis names, the accept/reject step with
each of them, and the evidence that names one only when it explains every answer so far
(graders/checks/speculative_decoding.py's tests gather it).
"""

from __future__ import annotations

from typing import Any

import torch

from graders.checks.report import CheckReport

NOT_STRICT = "a draft is accepted when u equals p / q: the test is strict, u < min(1, p / q)"
INVERTED_RATIO = "the acceptance ratio is inverted: accept when u < p / q (target over draft), not q / p"
RESIDUAL_IS_P = "after a rejection the token is drawn from p[j], not from the residual max(0, p[j] - q[j])"
RESIDUAL_Q_MINUS_P = (
    "the residual is q - p: it is max(0, p[j] - q[j]), the mass the target has and the draft lacks"
)
RESIDUAL_UNNORMALISED = "the residual is not normalised: draw with cumsum(w) > u * sum(w)"
RESIDUAL_NOT_CLAMPED = "the residual keeps negative entries: clamp p[j] - q[j] at 0"
BONUS_FROM_LAST_DRAFT = (
    "the bonus token is drawn from p[γ - 1]: when every draft is accepted it comes from p[γ]"
)
NO_BONUS = "no bonus token when every draft is accepted: one more comes from p[γ]"
DOES_NOT_STOP = "the step goes on after the first rejection: everything after it is dropped"
SORTED_DRAW = "the draw walks the distribution in sorted order: the cumulative sum runs in vocabulary order"
DRAW_GE = (
    "the draw takes cumsum >= u * sum: the rule is the smallest t with cumsum > u * sum "
    "(zero-mass tokens never drawn)"
)
NOT_EXACT = "the first emitted token is not distributed as the target's p[0]"
KNOWN_MISTAKES = (
    NOT_STRICT,
    INVERTED_RATIO,
    RESIDUAL_IS_P,
    RESIDUAL_Q_MINUS_P,
    RESIDUAL_UNNORMALISED,
    RESIDUAL_NOT_CLAMPED,
    BONUS_FROM_LAST_DRAFT,
    NO_BONUS,
    DOES_NOT_STOP,
    SORTED_DRAW,
    DRAW_GE,
    NOT_EXACT,
)


def draw(w: torch.Tensor, u: float, *, normalise: bool = True, order: str = "vocab", ge: bool = False) -> int:
    idx = torch.arange(w.shape[0])
    if order == "sorted":
        idx = torch.sort(w, descending=True, stable=True).indices
    cdf = w[idx].cumsum(0)
    bound = u * float(cdf[-1]) if normalise else u
    hits = ((cdf >= bound) if ge else (cdf > bound)).nonzero()
    if len(hits):
        return int(idx[int(hits[0])])
    return int(
        idx[(w[idx] > 0).nonzero()[-1]]
    )  # nothing passes u: the last token with weight, as the solution


def wrong_step(
    draft: torch.Tensor, q: torch.Tensor, p: torch.Tensor, ua: torch.Tensor, us: float, mistake: str
) -> list[int]:
    """accept_draft with one named mistake."""
    out: list[int] = []
    gamma = draft.shape[0]
    draws: dict[str, dict[str, Any]] = {
        RESIDUAL_UNNORMALISED: {"normalise": False},
        SORTED_DRAW: {"order": "sorted"},
        DRAW_GE: {"ge": True},
    }
    draw_kw = draws.get(mistake, {})
    for i, token in enumerate(draft.tolist()):
        ratio = (
            float(q[i, token] / p[i, token])
            if mistake == INVERTED_RATIO
            else float(p[i, token] / q[i, token])
        )
        accepted = (
            float(ua[i]) <= min(1.0, ratio) if mistake == NOT_STRICT else float(ua[i]) < min(1.0, ratio)
        )
        if accepted:
            out.append(token)
            continue
        if mistake == DOES_NOT_STOP:
            continue
        residual = {
            RESIDUAL_IS_P: p[i],
            RESIDUAL_Q_MINUS_P: (q[i] - p[i]).clamp(min=0),
            RESIDUAL_NOT_CLAMPED: p[i] - q[i],
        }.get(mistake, (p[i] - q[i]).clamp(min=0))
        return out + [draw(residual, us, **draw_kw)]
    if mistake == NO_BONUS and len(out) == gamma:
        return out
    if mistake == DOES_NOT_STOP and len(out) < gamma:
        return out + [draw(p[len(out)], us, **draw_kw)]
    row = gamma - 1 if mistake == BONUS_FROM_LAST_DRAFT else gamma
    return out + [draw(p[row], us, **draw_kw)]


class Evidence:
    """Every (case, answer) the submission gave so far: a mistake is named only if it explains them all."""

    def __init__(self) -> None:
        self.seen: list[tuple[tuple[Any, ...], list[int]]] = []

    def explains(self, mistake: str) -> bool:
        for (draft, q, p, ua, us), got in self.seen:
            try:
                if wrong_step(draft, q, p, ua, us, mistake) != got:
                    return False
            except (IndexError, RuntimeError, ZeroDivisionError):
                return False
        return True

    def name(self, report: CheckReport, case: tuple[Any, ...], want: list[int]) -> str:
        draft, q, p, ua, us = case
        for mistake in KNOWN_MISTAKES[:-1]:
            try:
                differs = wrong_step(draft, q, p, ua, us, mistake) != want
            except (IndexError, RuntimeError, ZeroDivisionError):
                continue
            if differs and self.explains(mistake):
                report.diagnose(mistake)
                return f". It looks like {mistake}"
        return ""

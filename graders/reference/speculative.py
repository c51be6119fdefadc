"""Speculative sampling's accept/reject step (the speculative-decoding challenge).

A draft model proposed γ tokens x_0..x_{γ-1} from its distributions q[0..γ-1]; one pass of
the target model gave p[0..γ] at the same positions and one more. In order, x_i is accepted
when u_accept[i] < min(1, p[i, x_i] / q[i, x_i]). At the first rejection j one token is drawn
from the residual max(0, p[j] - q[j]) (normalised) and the rest are dropped; if all γ are
accepted, a bonus token is drawn from p[γ]. Every emitted token is then distributed exactly
as the target alone would have sampled it (Leviathan et al. 2023, "Fast Inference from
Transformers via Speculative Decoding"; Chen et al. 2023, "Accelerating Large Language Model
Decoding with Speculative Sampling").

Drawing from w with u means the smallest t with cumsum(w)[t] > u * sum(w), in vocabulary
order. Two paths: `accept_draft` (a loop, as the prompt reads) and `accept_draft_vectorised`
(all ratios at once, then one draw); tests/graders/reference checks them against each other.
"""

from __future__ import annotations

import torch


def draw(w: torch.Tensor, u: float) -> int:
    """w (V,) non-negative weights -> the smallest t with cumsum(w)[t] > u * sum(w)."""
    cdf = w.cumsum(dim=0)  # (V,)
    above = (cdf > u * cdf[-1]).nonzero()
    return int(above[0]) if len(above) else int((w > 0).nonzero()[-1])  # rounding: last with mass


def accept_draft(
    draft_tokens: torch.Tensor,
    q_probs: torch.Tensor,
    p_probs: torch.Tensor,
    u_accept: torch.Tensor,
    u_sample: float,
) -> list[int]:
    """draft_tokens (γ,), q_probs (γ, V), p_probs (γ + 1, V), u_accept (γ,) -> 1 to γ + 1 tokens."""
    out: list[int] = []
    for i, token in enumerate(draft_tokens.tolist()):
        ratio = p_probs[i, token] / q_probs[i, token]
        if u_accept[i] < torch.clamp(ratio, max=1.0):
            out.append(token)
            continue
        residual = torch.clamp(p_probs[i] - q_probs[i], min=0.0)  # (V,)
        return out + [draw(residual, u_sample)]
    return out + [draw(p_probs[len(out)], u_sample)]  # every draft accepted: the bonus from p[γ]


def accept_draft_vectorised(
    draft_tokens: torch.Tensor,
    q_probs: torch.Tensor,
    p_probs: torch.Tensor,
    u_accept: torch.Tensor,
    u_sample: float,
) -> list[int]:
    """The same step with every ratio computed at once."""
    gamma = draft_tokens.shape[0]
    rows = torch.arange(gamma)
    ratio = p_probs[rows, draft_tokens] / q_probs[rows, draft_tokens]  # (γ,)
    accepted = u_accept < ratio.clamp(max=1.0)  # (γ,) bool
    n = int(accepted.to(torch.int64).cumprod(dim=0).sum())  # the accepted prefix
    if n == gamma:
        w = p_probs[gamma]  # (V,)
    else:
        w = (p_probs[n] - q_probs[n]).clamp(min=0.0)  # (V,)
    return draft_tokens[:n].tolist() + [draw(w, u_sample)]


def acceptance_rate(q_probs: torch.Tensor, p_probs: torch.Tensor) -> torch.Tensor:
    """(γ,) the probability that each position's draft is accepted: sum over V of min(p, q)."""
    return torch.minimum(q_probs, p_probs[: q_probs.shape[0]]).sum(dim=-1)

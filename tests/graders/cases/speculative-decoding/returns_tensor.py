# expect: failed
# diagnosis: a list of Python ints
# A LongTensor instead of a list.
import torch


def _draw(w, u):
    """The smallest t with cumsum(w)[t] > u * sum(w): inverse CDF of w without normalising it."""
    cdf = w.cumsum(dim=0)  # (V,), vocabulary order
    hits = (cdf > u * cdf[-1]).nonzero()
    # Strict '>' never lands on a token of zero weight; rounding can leave no hit for u close
    # to 1, and then the last token with weight is the answer.
    return int(hits[0]) if len(hits) else int((w > 0).nonzero()[-1])


def accept_draft(draft_tokens, q_probs, p_probs, u_accept, u_sample):
    """draft_tokens (γ,), q_probs (γ, V), p_probs (γ + 1, V), u_accept (γ,) -> 1 to γ + 1 ints."""
    out = []
    for i, token in enumerate(draft_tokens.tolist()):
        # Keep the draft with probability min(1, p/q): always when the target likes the
        # token at least as much as the draft did.
        ratio = p_probs[i, token] / q_probs[i, token]
        if u_accept[i] < torch.clamp(ratio, max=1.0):
            out.append(token)
            continue
        # Rejected: draw from what the target wants and the draft under-proposed. Together
        # with the acceptances this makes the emitted token distributed exactly as p[i].
        residual = torch.clamp(p_probs[i] - q_probs[i], min=0.0)  # (V,)
        return out + [_draw(residual, u_sample)]  # the later drafts are dropped
    # Every draft accepted: the target's pass already computed p[γ], one more token for free.
    return torch.tensor(out + [_draw(p_probs[len(out)], u_sample)])

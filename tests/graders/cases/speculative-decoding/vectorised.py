# expect: passed
# A correct variant: every ratio at once, the accepted prefix by cumprod, searchsorted for the draw.
import torch


def accept_draft(draft_tokens, q_probs, p_probs, u_accept, u_sample):
    gamma = draft_tokens.shape[0]
    rows = torch.arange(gamma)
    ratio = p_probs[rows, draft_tokens] / q_probs[rows, draft_tokens]
    ok = (u_accept < ratio.clamp(max=1)).long()
    n = int(ok.cumprod(0).sum())
    w = p_probs[gamma] if n == gamma else (p_probs[n] - q_probs[n]).clamp(min=0)
    cdf = w.cumsum(0)
    t = int(torch.searchsorted(cdf, (u_sample * cdf[-1]).reshape(1), right=True))
    return draft_tokens[:n].tolist() + [min(t, w.shape[0] - 1)]

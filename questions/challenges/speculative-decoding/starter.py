import torch


def accept_draft(draft_tokens, q_probs, p_probs, u_accept, u_sample):
    """One speculative-decoding step.

    draft_tokens (γ,) from the draft model, q_probs (γ, V) its distributions,
    p_probs (γ + 1, V) the target's, u_accept (γ,) and u_sample uniform in [0, 1).
    Returns the accepted drafts and one sampled token, as a list of Python ints.
    """
    raise NotImplementedError

import torch


def beam_search(model, prompt, beam_width, max_new_tokens, eos_id=None, length_penalty=1.0):
    """Up to beam_width hypotheses (prompt + generated tokens, final score), best first.

    model.prefill(prompt) -> (log_probs (V,), cache)        once, for the token after the prompt
    model.step(tokens, cache) -> (log_probs (N, V), cache)  tokens: LongTensor (N,), one per cache row
    model.reorder(cache, rows) -> cache                     new row i is old row rows[i]
    """
    raise NotImplementedError

# expect: error
# The search under another name: the grader calls beam_search.
import torch


def search(model, prompt, beam_width, max_new_tokens, eos_id=None, length_penalty=1.0):
    log_probs, cache = model.prefill(list(prompt))
    return [(list(prompt) + [int(torch.argmax(log_probs))], float(log_probs.max()))]

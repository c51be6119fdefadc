import torch


def process_logits(
    logits,
    tokens,
    repetition_penalty=1.0,
    presence_penalty=0.0,
    frequency_penalty=0.0,
    no_repeat_ngram_size=0,
    temperature=1.0,
    min_p=0.0,
):
    """logits (B, V), tokens: B lists of ids -> new logits (B, V), in this order: repetition penalty,
    presence and frequency penalties, no-repeat n-gram, temperature, min-p. Leave the input unchanged."""
    raise NotImplementedError

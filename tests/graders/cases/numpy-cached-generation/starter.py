# expect: failed
# The starter file: every function raises NotImplementedError.
import numpy as np


def prefill(params, tokens):
    """Process the prompt in one causally masked pass.

    params: dict of float64 arrays, E (V, d), W_q, W_k, W_v, W_o (d, d), W_lm (d, V).
    tokens: list of ints. Returns (cache, logits): cache = {"k": (t, d), "v": (t, d)},
    logits (V,) for the last position.
    """
    raise NotImplementedError


def decode_step(params, token, cache):
    """Process one token against the cache.

    Appends one row to cache["k"] and cache["v"] and returns the logits (V,) for this
    position. Reads the past only from `cache`.
    """
    raise NotImplementedError


def generate_cached(params, prompt, n_new):
    """Return the prompt followed by n_new greedily chosen tokens, as a list of ints."""
    raise NotImplementedError

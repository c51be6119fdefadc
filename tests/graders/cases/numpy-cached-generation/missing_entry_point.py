# expect: error
# prefill and decode_step only: generate_cached, the entry point, is missing.
import numpy as np


def prefill(params, tokens):
    x = params["E"][tokens]
    return {"k": x @ params["W_k"], "v": x @ params["W_v"]}, np.zeros(params["W_lm"].shape[1])


def decode_step(params, token, cache):
    return np.zeros(params["W_lm"].shape[1])

import torch
import torch.nn.functional as F


def route(x, w_router, top_k, renormalize=True):
    """x (T, d), w_router (d, E) -> (weights (T, top_k), experts (T, top_k) LongTensor).

    Softmax over all E experts, keep the top_k most probable (ties to the lower index) in
    descending order; divide their probabilities by their sum when renormalize is true.
    """
    raise NotImplementedError


def moe_layer(x, w_router, w_gate, w_up, w_down, top_k, renormalize=True, capacity=None):
    """x (T, d) -> (T, d). w_gate, w_up (E, d, f), w_down (E, f, d).

    Expert e maps a token h to (silu(h @ w_gate[e]) * (h @ w_up[e])) @ w_down[e]; the output is
    the sum over each token's routed experts of weight times expert output. With capacity, an
    expert takes at most `capacity` assignments, first come by token index.
    Run each expert only on its own tokens.
    """
    raise NotImplementedError

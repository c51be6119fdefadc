import math

import torch
import torch.nn.functional as F


def padded_attention(x, w_qkv, w_o, n_heads, attention_mask, cache=None, base=10000.0):
    """RoPE causal self-attention over a batch of prompts padded on the left.

    x:               (B, T, d), the next T columns of the batch (the prompt, a chunk, or one token)
    attention_mask:  (B, S_past + T), int64 or bool, 1 = real token, covering cached and new columns
    cache:           None, {} or {"k", "v"}, each (B, n_heads, S_past, hd), keys rotated
    Returns (y, cache): y (B, T, d); the cache holds every slot, padding included.

    A real token's RoPE position is the number of real tokens before it in its row
    (half-split pairs, theta_i = base ** (-2i / hd)); no query sees a padding key;
    y at padding positions may be anything finite, never NaN.
    """
    raise NotImplementedError

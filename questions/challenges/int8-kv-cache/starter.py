import math

import torch


def quantize_kv(x):
    """x: float32 (B, H, T, hd) -> (q int8 (B, H, T, hd), scale float32 (B, H, T, 1)).

    One scale per token and head: max |x| over hd / 127 (1.0 for a row of zeros);
    q = round(x / scale), halves to even, clamped to [-127, 127].
    """
    raise NotImplementedError


def dequantize_kv(q, scale):
    """q int8 (B, H, T, hd), scale (B, H, T, 1) -> float32 (B, H, T, hd)."""
    raise NotImplementedError


def int8_attention(q, k_q, k_scale, v_q, v_scale):
    """q (B, H, 1, hd) over T quantized positions -> (B, H, 1, hd), no mask."""
    raise NotImplementedError

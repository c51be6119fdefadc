import torch


def quantize_int4(w, group_size):
    """w (N, K) float32 -> (packed uint8 (N, K // 2), scales float32 (N, K // group_size),
    zeros uint8 (N, K // group_size)).

    Per row and group of group_size consecutive columns: scale = (max - min) / 15 (1.0 when
    max == min), zero = clamp(round(-min / scale), 0, 15), q = clamp(round(w / scale) + zero, 0, 15).
    Column 2j goes in the low four bits of byte j, column 2j + 1 in the high four.
    ValueError when K is not a multiple of group_size or group_size is odd.
    """
    raise NotImplementedError


def dequantize_int4(packed, scales, zeros, group_size):
    """-> float32 (N, K): (q - zero) * scale."""
    raise NotImplementedError


def w4a16_matmul(x, packed, scales, zeros, group_size):
    """x (M, K) -> x @ dequantize_int4(packed, scales, zeros, group_size).T, (M, N).

    Do not build the whole dequantized weight: no float tensor over max(M * N, N * group_size).
    """
    raise NotImplementedError

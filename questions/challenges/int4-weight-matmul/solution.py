"""Weight-only int4 (W4A16) as GPTQ and AWQ store it: asymmetric, one scale and zero per group of K."""

import torch


def quantize_int4(w, group_size):
    """w (N, K) float32 -> packed uint8 (N, K // 2), scales float32 (N, G), zeros uint8 (N, G)."""
    N, K = w.shape
    if group_size <= 0 or group_size % 2:
        raise ValueError(f"group_size={group_size} must be even: two codes share a byte")
    if K % group_size:
        raise ValueError(f"K={K} is not a multiple of group_size={group_size}")
    wg = w.reshape(N, K // group_size, group_size)  # (N, G, group_size): consecutive input columns
    lo, hi = wg.amin(-1), wg.amax(-1)  # (N, G)
    # A constant group has max == min: give it scale 1.0 instead of dividing by 0.
    scale = torch.where(hi == lo, torch.ones_like(lo), (hi - lo) / 15)
    zero = torch.clamp(torch.round(-lo / scale), 0, 15)  # the code that 0.0 maps to
    # torch.round rounds halves to even; clamp before the cast, which would wrap 16 to 0.
    q = torch.clamp(torch.round(wg / scale[..., None]) + zero[..., None], 0, 15).to(torch.uint8)
    q = q.reshape(N, K)
    packed = q[:, 0::2] | (q[:, 1::2] << 4)  # column 2j in the low nibble, 2j + 1 in the high
    return packed, scale, zero.to(torch.uint8)


def _codes(packed):
    """uint8 (N, n // 2) -> uint8 (N, n): the low nibble first."""
    return torch.stack((packed & 0xF, packed >> 4), dim=-1).reshape(packed.shape[0], -1)


def dequantize_int4(packed, scales, zeros, group_size):
    """-> float32 (N, K): (q - zero) * scale."""
    q = _codes(packed).float()  # float first: in uint8, 3 - 5 wraps around to 254
    N, K = q.shape
    qg = q.reshape(N, K // group_size, group_size)  # (N, G, group_size)
    return ((qg - zeros.float()[..., None]) * scales[..., None]).reshape(N, K)


def w4a16_matmul(x, packed, scales, zeros, group_size):
    """x (M, K) @ dequantize_int4(...).T -> (M, N), dequantizing one group of K at a time."""
    M, K = x.shape
    N = packed.shape[0]
    half = group_size // 2  # bytes per group in a row
    # Low nibbles hold the even columns, high nibbles the odd ones: multiply each by its own
    # columns of x instead of interleaving the codes back.
    x_even, x_odd = x[:, 0::2], x[:, 1::2]  # (M, K // 2) views
    out = x.new_zeros(M, N)
    for g in range(K // group_size):
        b = packed[:, g * half : (g + 1) * half]  # (N, half): this group's bytes, integers
        z, s = zeros[:, g, None].float(), scales[:, g, None]  # (N, 1)
        w_even = ((b & 0xF).float() - z) * s  # (N, half): the group's columns 2j
        w_odd = ((b >> 4).float() - z) * s  # (N, half): its columns 2j + 1
        cols = slice(g * half, (g + 1) * half)
        out += x_even[:, cols] @ w_even.T + x_odd[:, cols] @ w_odd.T  # (M, N): this group's share of K
    return out

# expect: failed
# diagnosis: one scale and zero per row, not one per group of group_size consecutive columns
# One scale and zero per row.
import torch


def quantize_int4(w, group_size):
    """w (N, K) float32 -> packed uint8 (N, K // 2), scales float32 (N, G), zeros uint8 (N, G)."""
    N, K = w.shape
    if group_size <= 0 or group_size % 2:
        raise ValueError(f"group_size={group_size} must be even: two codes share a byte")
    if K % group_size:
        raise ValueError(f"K={K} is not a multiple of group_size={group_size}")
    lo, hi = w.amin(-1, keepdim=True), w.amax(-1, keepdim=True)  # (N, G)
    # A constant group has max == min: give it scale 1.0 instead of dividing by 0.
    scale = torch.where(hi == lo, torch.ones_like(lo), (hi - lo) / 15)
    zero = torch.clamp(torch.round(-lo / scale), 0, 15)  # the code that 0.0 maps to
    # torch.round rounds halves to even; clamp before the cast, which would wrap 16 to 0.
    q = torch.clamp(torch.round(w / scale) + zero, 0, 15).to(torch.uint8)
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
    out = x.new_zeros(M, N)
    for g in range(K // group_size):
        codes = _codes(packed[:, g * half : (g + 1) * half])  # (N, group_size), integers: not counted
        w_g = (codes.float() - zeros[:, g, None].float()) * scales[:, g, None]  # (N, group_size)
        out += x[:, g * group_size : (g + 1) * group_size] @ w_g.T  # (M, N): this group's share of K
    return out

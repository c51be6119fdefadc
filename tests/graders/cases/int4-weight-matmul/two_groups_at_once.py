# expect: failed
# diagnosis: builds a float tensor bigger than one group's columns or the output
# Dequantizes two groups of K at a time: the numbers are right, the float tensors twice the allowance.
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
    """x (M, K) @ dequantize_int4(...).T -> (M, N), two groups of K at a time."""
    K = x.shape[1]
    G = K // group_size
    out = x.new_zeros(x.shape[0], packed.shape[0])
    for g in range(0, G, 2):
        h = min(g + 2, G)  # groups g .. h - 1
        lo, hi = g * group_size, h * group_size
        w_gh = dequantize_int4(packed[:, lo // 2 : hi // 2], scales[:, g:h], zeros[:, g:h], group_size)
        out += x[:, lo:hi] @ w_gh.T  # w_gh (N, 2 * group_size): twice one group's columns
    return out

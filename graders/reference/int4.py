"""Weight-only int4 quantization, W4A16 (int4-weight-matmul in shared/CONTRACT.md).

The format GPTQ (arXiv:2210.17323) and AWQ (arXiv:2306.00978) checkpoints store: a weight
w (N, K) = (out_features, in_features) is cut, row by row, into groups of `group_size`
consecutive input columns; each group gets an asymmetric grid of 16 levels,

    scale = (max - min) / 15                      (1.0 when max == min)
    zero  = clamp(round(-min / scale), 0, 15)     the code 0.0 maps to, uint8
    q     = clamp(round(w / scale) + zero, 0, 15)
    w    ~= (q - zero) * scale

with torch.round (half to even). Two codes share a byte: column 2j in the low nibble, 2j + 1
in the high one. `w4a16_matmul` multiplies activations by the weight one group of K at a time,
so the largest float tensor it makes is one group's dequantized columns (N, group_size) or the
output (M, N), never the whole (N, K) weight: what the real kernels do in registers.

Two paths, tested against each other: `*_explicit` walks rows, groups and columns in Python
floats; the vectorised path is what the battery compares with.
"""

from __future__ import annotations

import torch

QMAX = 15  # 4 bits: codes 0 .. 15


def check_group_size(K: int, group_size: int) -> None:
    """ValueError naming both values when K is not a multiple of group_size or group_size is odd."""
    if group_size <= 0 or group_size % 2:
        raise ValueError(f"group_size={group_size} must be a positive even number (two codes per byte)")
    if K % group_size:
        raise ValueError(f"K={K} is not a multiple of group_size={group_size}")


def group_scales(w: torch.Tensor, group_size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """w (N, K) -> (scale float32, zero float32), both (N, K // group_size)."""
    N, K = w.shape
    wg = w.reshape(N, K // group_size, group_size)  # (N, G, group_size): consecutive columns
    lo, hi = wg.amin(-1), wg.amax(-1)  # (N, G)
    scale = torch.where(hi == lo, torch.ones_like(lo), (hi - lo) / QMAX)  # a constant group: 1.0
    zero = torch.clamp(torch.round(-lo / scale), 0, QMAX)  # (N, G)
    return scale, zero


def pack(q: torch.Tensor) -> torch.Tensor:
    """Codes (N, K) in 0..15, any integer dtype -> uint8 (N, K // 2): column 2j low, 2j + 1 high."""
    q = q.to(torch.uint8)
    return q[:, 0::2] | (q[:, 1::2] << 4)


def unpack(packed: torch.Tensor) -> torch.Tensor:
    """uint8 (N, K // 2) -> uint8 codes (N, K)."""
    N = packed.shape[0]
    low, high = packed & 0xF, packed >> 4  # (N, K // 2) each
    return torch.stack((low, high), dim=-1).reshape(N, -1)  # (N, K): low, high, low, high, ...


def quantize_int4(w: torch.Tensor, group_size: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """w (N, K) float32 -> (packed uint8 (N, K // 2), scales float32 (N, G), zeros uint8 (N, G))."""
    N, K = w.shape
    check_group_size(K, group_size)
    scale, zero = group_scales(w, group_size)
    wg = w.reshape(N, K // group_size, group_size)  # (N, G, group_size)
    q = torch.clamp(torch.round(wg / scale[..., None]) + zero[..., None], 0, QMAX)  # (N, G, group_size)
    return pack(q.reshape(N, K)), scale, zero.to(torch.uint8)


def dequantize_int4(
    packed: torch.Tensor, scales: torch.Tensor, zeros: torch.Tensor, group_size: int
) -> torch.Tensor:
    """-> float32 (N, K): (q - zero) * scale, each group's scale and zero over its columns."""
    q = unpack(packed).float()  # (N, K); float before subtracting: uint8 3 - 5 would wrap to 254
    N, K = q.shape
    qg = q.reshape(N, K // group_size, group_size)  # (N, G, group_size)
    return ((qg - zeros.float()[..., None]) * scales[..., None]).reshape(N, K)


def w4a16_matmul(
    x: torch.Tensor, packed: torch.Tensor, scales: torch.Tensor, zeros: torch.Tensor, group_size: int
) -> torch.Tensor:
    """x (M, K) @ dequantized (N, K).T -> (M, N), one group of K at a time."""
    M, K = x.shape
    N = packed.shape[0]
    half = group_size // 2
    out = x.new_zeros(M, N)
    for g in range(K // group_size):
        codes = unpack(packed[:, g * half : (g + 1) * half])  # (N, group_size) uint8
        w_g = (codes.float() - zeros[:, g, None].float()) * scales[:, g, None]  # (N, group_size)
        out += x[:, g * group_size : (g + 1) * group_size] @ w_g.T  # (M, N)
    return out


def quantize_int4_explicit(
    w: torch.Tensor, group_size: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """quantize_int4 one row, group and column at a time (float32 arithmetic, Python's round)."""
    N, K = w.shape
    check_group_size(K, group_size)
    G = K // group_size
    scales = torch.empty(N, G)
    zeros = torch.empty(N, G, dtype=torch.uint8)
    packed = torch.zeros(N, K // 2, dtype=torch.uint8)
    for n in range(N):
        for g in range(G):
            group = w[n, g * group_size : (g + 1) * group_size]
            lo, hi = group.min(), group.max()  # float32 scalars
            s = torch.tensor(1.0) if lo == hi else (hi - lo) / QMAX
            z = min(QMAX, max(0, round(float(-lo / s))))  # round(): half to even
            scales[n, g], zeros[n, g] = s, z
            for i in range(group_size):
                col = g * group_size + i
                code = min(QMAX, max(0, round(float(group[i] / s)) + z))
                packed[n, col // 2] |= code << (4 * (col % 2))  # even column low, odd high
    return packed, scales, zeros


def dequantize_int4_explicit(
    packed: torch.Tensor, scales: torch.Tensor, zeros: torch.Tensor, group_size: int
) -> torch.Tensor:
    """dequantize_int4 one weight at a time."""
    N, half = packed.shape
    out = torch.empty(N, 2 * half)
    for n in range(N):
        for col in range(2 * half):
            code = (int(packed[n, col // 2]) >> (4 * (col % 2))) & 0xF
            g = col // group_size
            out[n, col] = (code - int(zeros[n, g])) * scales[n, g]
    return out


def matmul_multiply_adds(M: int, N: int, K: int) -> int:
    """x (M, K) by a (K, N) weight: the work of the plain product, grouped or not."""
    return M * N * K


def largest_allowed(M: int, N: int, group_size: int) -> int:
    """The contract's bound on w4a16_matmul's largest float tensor, in elements."""
    return max(M * N, N * group_size)

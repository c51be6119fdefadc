"""int4-weight-matmul's named mistakes: their sentences, the known-wrong quantizers and
dequantizers that produce them, and the structural tests that name the clamp and constant-group
mistakes whatever a submission's overflowing bits came out as.

Every wrong path is the reference's arithmetic (float32, as the contract) with one rule
changed, so a submission that made exactly that mistake matches it bit for bit.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from graders.reference.int4 import QMAX, dequantize_int4, group_scales, pack, unpack

NIBBLES_SWAPPED = (
    "column 2j is packed in the high four bits and 2j + 1 in the low: the contract puts column 2j in the "
    "low nibble of byte j"
)
ZERO_SUBTRACTED = "the zero point is subtracted when quantizing: q = round(w / scale) + zero"
ZERO_SIGN = "the zero point is round(min / scale): it is round(-min / scale), the code that 0.0 maps to"
GROUPS_STRIDED = (
    "each group takes every (K / group_size)-th column, not group_size consecutive columns: view w as "
    "(N, K // group_size, group_size), not (N, group_size, K // group_size)"
)
PER_ROW = "one scale and zero per row, not one per group of group_size consecutive columns"
SCALE_16 = "the scale is (max - min) / 16: 4 bits give 16 codes, 0 .. 15, so 15 steps: (max - min) / 15"
HALF_UP = "halves are rounded up (floor(x + 0.5)), not to even as torch.round does"
HALF_AWAY = "halves are rounded away from zero, not to even as torch.round does"
TRUNCATES = "values are truncated toward zero (a cast without torch.round)"
CODES_NOT_CLAMPED = (
    "the codes are not clamped to 0 .. 15: where the zero point itself was clamped (a group all positive or "
    "all negative) round(w / scale) + zero leaves the range and spills into the other nibble"
)
ZERO_NOT_CLAMPED = (
    "the zero point is not clamped to 0 .. 15: for a group all positive round(-min / scale) is negative, "
    "for one all negative it is over 15, and uint8 wraps or keeps it"
)
CONSTANT_GROUP = (
    "a constant group (max == min) must get scale 1.0: (max - min) / 15 is 0, and w / 0 gives NaN"
)
ZEROS_NOT_UINT8 = "zeros are not uint8: the contract stores each zero point as a uint8 code"
PACKED_NOT_UINT8 = "packed is not uint8 (int8 turns a high nibble of 8 or more into a negative number)"
NO_VALUE_ERROR_K = "no ValueError when K is not a multiple of group_size"
NO_VALUE_ERROR_ODD = "no ValueError for an odd group_size (two codes share a byte, so a group must be even)"
UNPACK_SWAPPED = "unpacking takes the high nibble as column 2j: column 2j is the low four bits, packed & 0xF"
DEQUANT_ZERO_ADDED = "dequantization adds the zero point: it is (q - zero) * scale"
DEQUANT_TILED = (
    "the scales and zeros are tiled along K (repeat) instead of each covering its group_size columns "
    "(repeat_interleave, or a reshape to (N, K // group_size, group_size))"
)
ZERO_AFTER_SCALE = "the zero point is subtracted after scaling, q * scale - zero: it is (q - zero) * scale"
UINT8_WRAP = (
    "q - zero is computed in uint8 and wraps around (3 - 5 = 254): convert the codes and zeros to float "
    "before subtracting"
)
FULL_DEQUANT = "dequantizes the whole weight"
BIGGER_THAN_ALLOWED = "builds a float tensor bigger than one group's columns or the output"
KNOWN_MISTAKES = (
    NIBBLES_SWAPPED, ZERO_SUBTRACTED, ZERO_SIGN, GROUPS_STRIDED, PER_ROW, SCALE_16, HALF_UP, HALF_AWAY,
    TRUNCATES, CODES_NOT_CLAMPED, ZERO_NOT_CLAMPED, CONSTANT_GROUP, ZEROS_NOT_UINT8, PACKED_NOT_UINT8,
    NO_VALUE_ERROR_K, NO_VALUE_ERROR_ODD, UNPACK_SWAPPED, DEQUANT_ZERO_ADDED, DEQUANT_TILED, ZERO_AFTER_SCALE,
    UINT8_WRAP, FULL_DEQUANT, BIGGER_THAN_ALLOWED,
)  # fmt: skip

Quantized = tuple[torch.Tensor, torch.Tensor, torch.Tensor]  # packed uint8, scales float32, zeros (int64)


# --- known-wrong quantizers -----------------------------------------------------------------------


def _half_up(x: torch.Tensor) -> torch.Tensor:
    return torch.floor(x + 0.5)


def _half_away(x: torch.Tensor) -> torch.Tensor:
    return torch.sign(x) * torch.floor(x.abs() + 0.5)


ROUNDINGS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    HALF_UP: _half_up,
    HALF_AWAY: _half_away,
    TRUNCATES: torch.trunc,
}


def quantize_variant(w: torch.Tensor, group_size: int, mistake: str) -> Quantized:
    """quantize_int4 with one named mistake; zeros come back as int64 so that nothing wraps here."""
    N, K = w.shape
    G = K // group_size
    wg = w.reshape(N, G, group_size)  # (N, G, group_size)
    if mistake == GROUPS_STRIDED:
        wg = w.reshape(N, group_size, G).transpose(1, 2)  # group g: columns g, g + G, g + 2G, ...
    if mistake == PER_ROW:
        wg = w.reshape(N, 1, K).expand(N, G, K)  # every group sees the whole row
    rnd = ROUNDINGS.get(mistake, torch.round)
    lo, hi = wg.amin(-1), wg.amax(-1)  # (N, G)
    scale = torch.where(hi == lo, torch.ones_like(lo), (hi - lo) / (16 if mistake == SCALE_16 else QMAX))
    zero = torch.clamp(rnd((lo if mistake == ZERO_SIGN else -lo) / scale), 0, QMAX)
    if mistake == GROUPS_STRIDED:  # the codes of column c use the stats of group c % G
        col_scale, col_zero = scale.repeat(1, group_size), zero.repeat(1, group_size)  # (N, K)
    else:
        col_scale, col_zero = scale.repeat_interleave(group_size, 1), zero.repeat_interleave(group_size, 1)
    sign = -1.0 if mistake == ZERO_SUBTRACTED else 1.0
    q = torch.clamp(rnd(w / col_scale) + sign * col_zero, 0, QMAX).to(torch.uint8)  # (N, K)
    packed = pack(q)
    if mistake == NIBBLES_SWAPPED:
        packed = (packed >> 4) | (packed << 4)
    return packed, scale, zero.long()


QUANTIZE_MISTAKES = (
    NIBBLES_SWAPPED, ZERO_SUBTRACTED, ZERO_SIGN, GROUPS_STRIDED, PER_ROW, SCALE_16, HALF_UP, HALF_AWAY,
    TRUNCATES,
)  # fmt: skip


def unclamped(w: torch.Tensor, group_size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(codes (N, K), zeros (N, G)) as the contract computes them before either clamp, int64."""
    N, K = w.shape
    lo = w.reshape(N, K // group_size, group_size).amin(-1)
    scale, _ = group_scales(w, group_size)
    zero = torch.round(-lo / scale)  # (N, G), unclamped
    codes = torch.round(w / scale.repeat_interleave(group_size, 1)) + torch.clamp(
        zero, 0, QMAX
    ).repeat_interleave(group_size, 1)  # (N, K): the zero clamped, the code not
    return codes.long(), zero.long()


def wrong_only_where(differs: torch.Tensor, allowed: torch.Tensor) -> bool:
    """Some entry differs, and every entry that differs is one of the allowed ones."""
    return bool(differs.any()) and not bool((differs & ~allowed).any())


# --- known-wrong dequantizers ---------------------------------------------------------------------


def dequantize_variant(
    packed: torch.Tensor, scales: torch.Tensor, zeros: torch.Tensor, group_size: int, mistake: str
) -> torch.Tensor:
    """dequantize_int4 with one named mistake, float32 (N, K)."""
    q = unpack(packed)  # (N, K) uint8
    N, K = q.shape
    if mistake == UNPACK_SWAPPED:
        q = q.reshape(N, K // 2, 2).flip(-1).reshape(N, K)
    if mistake == DEQUANT_TILED:
        s, z = scales.repeat(1, group_size), zeros.repeat(1, group_size)  # (N, K): group g % G
    else:
        s, z = scales.repeat_interleave(group_size, 1), zeros.repeat_interleave(group_size, 1)
    if mistake == UINT8_WRAP:
        return (q - z.to(torch.uint8)).float() * s
    qf, zf = q.float(), z.float()
    if mistake == DEQUANT_ZERO_ADDED:
        return (qf + zf) * s
    if mistake == ZERO_AFTER_SCALE:
        return qf * s - zf
    return (qf - zf) * s


DEQUANTIZE_MISTAKES = (UNPACK_SWAPPED, DEQUANT_ZERO_ADDED, DEQUANT_TILED, ZERO_AFTER_SCALE, UINT8_WRAP)


def dequantize_variants(
    packed: torch.Tensor, scales: torch.Tensor, zeros: torch.Tensor, group_size: int
) -> list[tuple[str, torch.Tensor]]:
    right = dequantize_int4(packed, scales, zeros, group_size)
    out = [(m, dequantize_variant(packed, scales, zeros, group_size, m)) for m in DEQUANTIZE_MISTAKES]
    return [(m, t) for m, t in out if not torch.equal(t, right)]

"""int4-weight-matmul's inputs: the probe weight quantize_int4 gets, and the random packed format
dequantize_int4 and w4a16_matmul get (a big one repeats one block of rows, so the grader's own
product is computed on that block: the submission cannot tell, and the check costs 1 / 16)."""

from __future__ import annotations

import torch

from graders.checks.serving_common import Rng
from graders.reference.int4 import w4a16_matmul

Format = tuple[torch.Tensor, torch.Tensor, torch.Tensor]  # packed uint8 (N, K // 2), scales, zeros (N, G)


def probe_weight(rng: Rng, N: int, K: int, group_size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """w (N, K) with the four probe groups in rows 0 .. 3, and the (N, G) mask of constant groups."""
    G = K // group_size
    magnitude = torch.exp(rng.randn(N, G, 1))  # groups ~0.1 to ~10 times each other along K
    w = (rng.randn(N, G, group_size) * magnitude + rng.randn(N, G, 1) * 0.3).reshape(N, K)
    g = [rng.py.randrange(G) for _ in range(4)]
    cols = [slice(i * group_size, (i + 1) * group_size) for i in g]
    constant = torch.zeros(N, G, dtype=torch.bool)
    w[0, cols[0]] = rng.py.choice([-2.0, -0.75, 0.25, 3.0])  # max == min
    constant[0, g[0]] = True
    w[1, cols[1]] = 1.0 + 2.0 * rng.rand(group_size)  # all positive: the zero clamps to 0
    w[2, cols[2]] = -1.0 - 2.0 * rng.rand(group_size)  # all negative: the zero clamps to 15
    w[3, cols[3]] = halves_group(rng, group_size)
    return w, constant


def halves_group(rng: Rng, group_size: int) -> torch.Tensor:
    """One group on the grid step * (n + 0.5): max - min = 15 steps, so scale = step exactly,
    -min / scale = z + 0.5 with z even, and 2.5 and -2.5 (even integer parts) among the values."""
    step = 2.0 ** rng.py.randint(-5, 0)
    z = rng.py.choice([4, 6])
    lo, hi = -(z + 0.5), 14.5 - z  # in steps: hi - lo = 15
    values = [lo, hi, 2.5, -2.5] + [rng.py.randrange(-z, 14 - z) + 0.5 for _ in range(group_size - 4)]
    rng.py.shuffle(values)
    return torch.tensor(values) * step


BLOCK_ROWS = 256  # a big weight repeats one random block of rows: the grader's own product costs 1 / 16


def block_rows(N: int) -> int:
    return BLOCK_ROWS if N > BLOCK_ROWS and N % BLOCK_ROWS == 0 else N


def random_format(rng: Rng, N: int, K: int, group_size: int) -> Format:
    """Random packed bytes (every nibble value), zeros 0 .. 15 (uint8) and positive scales; over
    BLOCK_ROWS rows, one block of them repeated down the rows (so are the outputs' columns)."""
    G, rows = K // group_size, block_rows(N)
    packed = torch.randint(0, 256, (rows, K // 2), dtype=torch.uint8, generator=rng.torch)
    zeros = torch.randint(0, 16, (rows, G), dtype=torch.uint8, generator=rng.torch)
    # Scales c / 128 (c in 1 .. 16): with x from grid_activations every product and every partial
    # sum is a multiple of 2^-10 below 2^14 for K <= 2048, exact in float32, so any order of summing
    # (group by group, zero points folded, one whole product) gives the same bits.
    scales = torch.randint(1, 17, (rows, G), generator=rng.torch).float() / 128
    tiles = N // rows
    return packed.repeat(tiles, 1), scales.repeat(tiles, 1), zeros.repeat(tiles, 1)


def grid_activations(rng: Rng, M: int, K: int) -> torch.Tensor:
    """x (M, K) in multiples of 1/8 between -1 and 1 (see random_format)."""
    return torch.randint(-8, 9, (M, K), generator=rng.torch).float() / 8


def expected_product(x: torch.Tensor, fmt: Format, group_size: int) -> torch.Tensor:
    """The reference's x @ dequantized.T (M, N), computed on one block of rows and repeated."""
    N = fmt[0].shape[0]
    rows = block_rows(N)
    block = w4a16_matmul(x, fmt[0][:rows], fmt[1][:rows], fmt[2][:rows], group_size)  # (M, rows)
    return block.repeat(1, N // rows)

"""The block-scaled FP8 GEMM figures (fp8-block-scaled-gemm) against hand-worked values."""

from __future__ import annotations

from app.content.figures import compute_figures
from app.content.shapes import DEEPSEEK_V3

FIGURES = compute_figures()


def test_chunks_along_k_and_the_scale_bytes() -> None:
    # DeepSeek-V3's hidden size 7,168 = 56 x 128: 56 scaled partial sums per output element.
    assert DEEPSEEK_V3.hidden == 7168
    assert FIGURES["lp_v3_k_chunks"] == "56"
    # Up projection of one routed expert, 7,168 x 2,048: 56 x 16 = 896 blocks of 128 x 128,
    # 896 x 4 B = 3,584 B = 3.5 KiB of FP32 scales on 14,680,064 B = 14 MiB of FP8 weights.
    assert FIGURES["lp_v3_expert_up_blocks"] == "896"
    assert FIGURES["lp_v3_expert_up_scale_kib"] == "3.5 KiB"
    assert FIGURES["lp_v3_expert_up_mib_fp8"] == "14 MiB"
    assert 3584 / 14680064 == 4 / (128 * 128)  # the 0.024% of any 128 x 128 block
    assert FIGURES["lp_block_scale_overhead_weights"] == "0.024%"
    # A token's row: 56 tiles of 1 x 128, 224 B of scales on 7,168 B, 3.1%.
    assert FIGURES["lp_v3_token_scale_bytes"] == "224 bytes"
    assert FIGURES["lp_tile_scale_overhead_acts"] == "3.1%"

"""The Blackwell rows of the hardware table against NVIDIA's spec tables, and the card figures they
give, worked by hand.

NVIDIA prints tensor-core rates with 2:4 sparsity; the table holds the dense rates, half of them.
The HGX B200 column gives 7.7TB/s per GPU (62TB/s for eight), where the first 2024 sheets said
8TB/s; the GB200 NVL72 column gives 186GB at 8TB/s per GPU.
"""

from __future__ import annotations

import pytest

from app.content.figures import compute_figures
from app.content.hardware import B200_SXM, BLACKWELL_FP8_FP4, GB200_GPU, H100_SXM, H200_SXM

FIGURES = compute_figures()

# Per GPU, as printed (with sparsity): FP4, FP8, BF16 in PFLOPS; then GB and TB/s.
SHEET = {
    B200_SXM.name: (18, 9, 4.5, 180, 7.7),
    GB200_GPU.name: (20, 10, 5, 186, 8),
}


@pytest.mark.parametrize("gpu", [B200_SXM, GB200_GPU], ids=["b200", "gb200"])
def test_the_table_holds_the_dense_half_of_the_sheet(gpu) -> None:  # type: ignore[no-untyped-def]
    fp4, fp8, bf16, gb, tbs = SHEET[gpu.name]
    assert gpu.bf16_flops == bf16 * 1e15 / 2
    assert BLACKWELL_FP8_FP4[gpu.name] == (fp8 * 1e15 / 2, fp4 * 1e15 / 2)
    assert gpu.hbm_bytes == gb * 10**9
    assert gpu.hbm_bytes_per_s == pytest.approx(tbs * 1e12)
    assert str(tbs) + "TB/s" in gpu.source and f"{gb}GB" in gpu.source and "sparsity" in gpu.source


def test_b200_ridge_points() -> None:
    # 2.25e15 / 7.7e12 = 292.2; FP8 4.5e15 / 7.7e12 = 584.4; FP4 9e15 / 7.7e12 = 1,168.8.
    assert FIGURES["bw_ridge_b200"] == "292 FLOP/byte"
    assert FIGURES["bw_ridge_b200_fp8"] == "584.4 FLOP/byte"
    assert FIGURES["bw_ridge_b200_fp4"] == "1,169 FLOP/byte"
    # GB200's GPU: 2.5e15 / 8e12.
    assert FIGURES["bw_ridge_gb200"] == "312.5 FLOP/byte"
    # In BF16 the ridge barely moves from the H100's 295: compute and bandwidth grew alike.
    assert abs(B200_SXM.ridge_flops_per_byte - H100_SXM.ridge_flops_per_byte) < 5


def test_b200_decode_floors_follow_the_bandwidth() -> None:
    # 7.7 / 3.35 = 2.30 and 7.7 / 4.8 = 1.60, while dense BF16 rose 2.25 / 0.989 = 2.28x.
    assert FIGURES["bw_b200_vs_h100_bandwidth"] == "2.30x"
    assert FIGURES["bw_b200_vs_h200_bandwidth"] == "1.60x"
    assert FIGURES["bw_b200_vs_h100_bf16"] == "2.28x"
    # Llama-3.1-70B read per step (embedding table excluded): 69.5 GB in FP8 / 7.7 TB/s = 9.03 ms.
    assert FIGURES["bw_llama31_70b_fp8_gb"] == "69.5 GB"
    assert FIGURES["bw_llama31_70b_fp8_ms_b200"] == "9.03 ms"
    assert FIGURES["bw_llama31_70b_fp8_tps_b200"] == "111 tokens/s"
    assert FIGURES["bw_llama31_70b_bf16_ms_b200"] == "18.05 ms"  # 139.0 GB
    assert FIGURES["bw_llama31_70b_nvfp4_ms_b200"] == "5.08 ms"  # 39.1 GB at 4.5 bits
    assert FIGURES["bw_llama31_70b_nvfp4_tps_b200"] == "197 tokens/s"
    # The same bytes on an H200: 69.5 GB / 4.8 TB/s.
    assert FIGURES["bw_llama31_70b_fp8_ms_h200"] == "14.48 ms"
    assert H200_SXM.hbm_bytes_per_s == 4.8e12


def test_nvl72_memory() -> None:
    # 72 GPUs x 186 GB = 13.39 TB of HBM3E in one rack; eight HGX B200 GPUs hold 1,440 GB.
    assert FIGURES["bw_nvl72_gpus_hbm_tb"] == "13.4 TB"
    assert FIGURES["bw_node_gb_b200"] == "1,440 GB"

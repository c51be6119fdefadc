"""The GPUs the bank reasons about, with the data-sheet figures the cards quote.

Checked against the data sheets (the H100 and H200 sheets print BF16 with 2:4 sparsity, twice
the dense rate). Peak figures are the vendor's, for dense math (no 2:4 sparsity), in decimal units: a
"3.35 TB/s" data sheet means 3.35e12 bytes per second and "80 GB" means 80e9 bytes.
Real kernels reach a fraction of these (see MBU and MFU on the roofline cards).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GPU:
    name: str
    bf16_flops: float  # dense BF16 tensor-core FLOP/s
    hbm_bytes_per_s: float  # peak HBM bandwidth
    hbm_bytes: int  # memory capacity
    source: str  # the data sheet the figures come from

    @property
    def ridge_flops_per_byte(self) -> float:
        """Arithmetic intensity at which compute time equals memory time (the roofline's knee)."""
        return self.bf16_flops / self.hbm_bytes_per_s


A100_80GB = GPU(
    "A100 SXM 80GB",
    bf16_flops=312e12,
    hbm_bytes_per_s=2.039e12,
    hbm_bytes=80 * 10**9,
    source=(
        "NVIDIA A100 Tensor Core GPU data sheet (2021), A100 80GB SXM column: BFLOAT16 Tensor Core "
        "312 TFLOPS (624 with sparsity), 80GB HBM2e, 2,039 GB/s"
    ),
)
H100_SXM = GPU(
    "H100 SXM",
    bf16_flops=989e12,
    hbm_bytes_per_s=3.35e12,
    hbm_bytes=80 * 10**9,
    source=(
        "NVIDIA H100 Tensor Core GPU data sheet (2023), H100 SXM column: BFLOAT16 Tensor Core "
        "1,979 TFLOPS with sparsity (989 dense, half), 80GB, 3.35TB/s"
    ),
)
H200_SXM = GPU(
    "H200 SXM",
    bf16_flops=989e12,
    hbm_bytes_per_s=4.8e12,
    hbm_bytes=141 * 10**9,
    source=(
        "NVIDIA H200 Tensor Core GPU data sheet (2024), H200 SXM column: BFLOAT16 Tensor Core "
        "1,979 TFLOPS with sparsity (989 dense, half), 141GB HBM3e, 4.8TB/s"
    ),
)

GPUS: dict[str, GPU] = {"a100_80gb": A100_80GB, "h100_sxm": H100_SXM, "h200_sxm": H200_SXM}

# Blackwell. The per-GPU figures are NVIDIA's current spec tables (the HGX B200 column revised the
# first sheets' 8TB/s to 7.7TB/s: a 7,680-bit HBM3e bus, which pytorch/ao PR #4002 confirms from the
# driver). Dense rates are half the printed sparse ones; the dense/sparse pairs (HGX B200 at
# 1,000 W, GB200 at 1,200 W) are those of NVIDIA's Blackwell technical brief as tabulated at
# glennklockwood.com/garden/processors/B200. Kept out of GPUS so that the roofline figures and
# the numeric generator's draws over the Hopper and Ampere cards do not change; the 2026 figures
# (app/content/figures_2026.py) read these. FP8 and FP4 are dense tensor-core rates.

B200_SXM = GPU(
    "B200 SXM (HGX B200)",
    bf16_flops=2.25e15,
    hbm_bytes_per_s=7.7e12,
    hbm_bytes=180 * 10**9,
    source=(
        "NVIDIA HGX B200 specifications (NVIDIA HGX platform page, per GPU): FP4 Tensor Core "
        "18 PFLOPS, FP8/FP6 9 PFLOPS, FP16/BF16 4.5 PFLOPS (all with sparsity; dense is half: "
        "2.25 PFLOPS BF16), 180GB HBM3E, 7.7TB/s (8 GPUs: up to 62TB/s), NVLink 1.8TB/s"
    ),
)
GB200_GPU = GPU(
    "B200 in GB200 NVL72",
    bf16_flops=2.5e15,
    hbm_bytes_per_s=8e12,
    hbm_bytes=186 * 10**9,
    source=(
        "NVIDIA GB200 NVL72 specifications (NVIDIA GB200 NVL72 page, per Blackwell GPU): FP4 "
        "Tensor Core 20 PFLOPS, FP8/FP6 10 PFLOPS, FP16/BF16 5 PFLOPS (all with sparsity; dense "
        "is half: 2.5 PFLOPS BF16), 186GB HBM3E, 8TB/s; per rack 72 GPUs, up to 576TB/s, "
        "NVLink 130TB/s"
    ),
)
# name -> (dense FP8, dense FP4) FLOP/s, half the sheets' sparse figures
BLACKWELL_FP8_FP4: dict[str, tuple[float, float]] = {
    B200_SXM.name: (4.5e15, 9e15),
    GB200_GPU.name: (5e15, 10e15),
}
BLACKWELL: dict[str, GPU] = {"b200": B200_SXM, "gb200": GB200_GPU}

H100_FP8_FLOPS = 1979e12  # H100 SXM data sheet: FP8 Tensor Core 3,958 TFLOPS with sparsity
NVLINK5_BYTES_PER_S = 1.8e12  # per Blackwell GPU, both directions together (HGX B200 sheet)
NVLINK4_BYTES_PER_S = 900e9  # per H100 SXM GPU, both directions together (H100 sheet)

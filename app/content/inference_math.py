"""The serving loop's arithmetic, one function per formula, shared by the figures and the quiz.

Every function is exact arithmetic on its arguments (no rounding); callers format. Units are
bytes, seconds, FLOPs and FLOP/s unless a name says otherwise.

Sources: the roofline and MBU/MFU follow Pope et al., 2022, Efficiently Scaling Transformer
Inference (arXiv:2211.05102); the expected tokens of a speculative round are Leviathan et al.,
2023, Fast Inference from Transformers via Speculative Decoding (arXiv:2211.17192), eq. 1;
MLA's cache is DeepSeek-AI, 2024, DeepSeek-V2 (arXiv:2405.04434), section 2.1.
"""

from __future__ import annotations

import math

from app.content.hardware import GPU


def matmul_flops(params: int, tokens: int) -> int:
    """A forward pass costs about 2 FLOPs per parameter per token (one multiply, one add)."""
    return 2 * params * tokens


def decode_intensity(batch: int, bytes_per_param: float) -> float:
    """FLOPs per byte of weights read in one decode step of `batch` sequences.

    Each weight is read once per step and used by every sequence: 2 * batch FLOPs per
    parameter against `bytes_per_param` bytes. The KV cache read is left out (it adds bytes,
    never reuse across sequences), so this is an upper bound on the step's intensity.
    """
    return 2 * batch / bytes_per_param


def crossover_batch(gpu: GPU, bytes_per_param: float) -> float:
    """Batch at which a decode step's weight matmuls stop being memory-bound on `gpu`.

    Solves decode_intensity(b) = ridge point: b = ridge * bytes_per_param / 2.
    """
    return gpu.ridge_flops_per_byte * bytes_per_param / 2


def min_time_per_token(weight_bytes: float, kv_bytes: float, gpu: GPU) -> float:
    """Lower bound on a decode step's time: every weight and every cached byte read once from HBM."""
    return (weight_bytes + kv_bytes) / gpu.hbm_bytes_per_s


def max_tokens_per_second_batch1(weight_bytes: float, gpu: GPU) -> float:
    """Upper bound on one user's decode speed at batch 1 with a short cache: bandwidth / weights."""
    return gpu.hbm_bytes_per_s / weight_bytes


def compute_time(flops: float, gpu: GPU) -> float:
    """Lower bound on the time to do `flops` at the GPU's dense BF16 peak."""
    return flops / gpu.bf16_flops


def mbu(achieved_bytes_per_s: float, gpu: GPU) -> float:
    """Model bandwidth utilisation: bytes moved per second over the peak HBM bandwidth."""
    return achieved_bytes_per_s / gpu.hbm_bytes_per_s


def mfu(achieved_flops: float, gpu: GPU) -> float:
    """Model FLOPs utilisation: useful FLOP/s over the dense peak."""
    return achieved_flops / gpu.bf16_flops


def mla_bytes_per_token(layers: int, kv_lora_rank: int, rope_head_dim: int, bytes_per_element: int) -> int:
    """MLA caches one latent of kv_lora_rank plus one shared RoPE key of rope_head_dim per layer."""
    return layers * (kv_lora_rank + rope_head_dim) * bytes_per_element


def quantized_kv_bytes_per_token(
    layers: int, kv_heads: int, head_dim: int, bits: int, group_size: int, scale_bytes: int = 2
) -> float:
    """K and V at `bits` per element plus one scale of `scale_bytes` per group of `group_size` elements."""
    elements = 2 * layers * kv_heads * head_dim
    return elements * bits / 8 + elements / group_size * scale_bytes


def kv_heads_per_gpu(kv_heads: int, tp: int) -> int:
    """KV heads each GPU holds under tensor parallelism of degree `tp`.

    Heads split evenly when tp divides them; when tp exceeds the KV heads, each KV head is
    replicated on tp / kv_heads GPUs (so each GPU still holds one), as vLLM does.
    """
    if tp <= kv_heads:
        if kv_heads % tp:
            raise ValueError(f"tp={tp} does not divide kv_heads={kv_heads}")
        return kv_heads // tp
    if tp % kv_heads:
        raise ValueError(f"kv_heads={kv_heads} does not divide tp={tp}")
    return 1


def speculative_expected_tokens(alpha: float, gamma: int) -> float:
    """Expected tokens per target pass with acceptance rate alpha and gamma drafts (Leviathan eq. 1).

    (1 - alpha^(gamma + 1)) / (1 - alpha); gamma + 1 when every draft is always accepted.
    """
    if alpha == 1:
        return gamma + 1.0
    return (1 - alpha ** (gamma + 1)) / (1 - alpha)


def cost_per_million_tokens(gpu_dollars_per_hour: float, tokens_per_second: float) -> float:
    """Dollars per million generated tokens for a GPU rented by the hour at a sustained throughput."""
    return gpu_dollars_per_hour / (tokens_per_second * 3600) * 1e6


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def sequences_that_fit(free_bytes: float, bytes_per_sequence: float) -> int:
    """Whole sequences whose cache fits in free_bytes."""
    return math.floor(free_bytes / bytes_per_sequence)

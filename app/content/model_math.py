"""The model-side formulas the figures of figures_models.py state: a speculative step's accept and
residual distributions and best draft length, group quantization and the FP8 formats, MLA's cache
and its two decode paths, tensor parallelism's cache share, an expert's capacity.

Exact arithmetic on the arguments, as in app.content.inference_math (which holds the formulas the
quiz shares); the figures round and format.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from app.content import inference_math as im
from app.content.shapes import (
    MLAShape,
    ModelShape,
)


def accept_probabilities(p: Sequence[float], q: Sequence[float]) -> list[float]:
    """Per token x: accept a drafted x with probability min(1, p(x) / q(x))."""
    return [1.0 if qi <= pi else pi / qi for pi, qi in zip(p, q, strict=True)]


def residual_distribution(p: Sequence[float], q: Sequence[float]) -> list[float]:
    """What to sample after a rejection: max(0, p - q), normalised (Leviathan et al., Algorithm 1)."""
    excess = [max(0.0, pi - qi) for pi, qi in zip(p, q, strict=True)]
    total = sum(excess)
    return [e / total for e in excess]


def speculative_output_distribution(p: Sequence[float], q: Sequence[float]) -> list[float]:
    """P(emit x) = q(x) * accept(x) + P(reject) * residual(x); equals p for any q (the proof)."""
    accept = accept_probabilities(p, q)
    reject = 1 - im.acceptance_rate(p, q)
    if reject == 0:
        return [qi * a for qi, a in zip(q, accept, strict=True)]
    residual = residual_distribution(p, q)
    return [qi * a + reject * r for qi, a, r in zip(q, accept, residual, strict=True)]


def best_draft_length(alpha: float, cost_ratio: float, max_gamma: int = 32) -> int:
    """The gamma in 1..max_gamma that maximises the expected wall-time speed-up (Theorem 3.8)."""
    return max(range(1, max_gamma + 1), key=lambda g: im.speculative_walltime_speedup(alpha, g, cost_ratio))


def layer_params(model: ModelShape) -> int:
    """One Llama-style decoder layer: q, o, k, v projections, a gated MLP and two norms."""
    d, hd = model.hidden, model.head_dim
    return d * model.q_heads * hd * 2 + d * model.kv_heads * hd * 2 + 3 * d * model.intermediate + 2 * d


def group_quant_bits(bits: int, group_size: int, scale_bits: int = 16, zero_bits: int = 0) -> float:
    """Stored bits per weight: the code plus one scale (and zero point) shared by each group."""
    return bits + (scale_bits + zero_bits) / group_size


def quantize_symmetric(values: Sequence[float], bits: int = 8) -> tuple[float, list[int]]:
    """Symmetric absmax quantization: scale = max|x| / (2^(bits-1) - 1), codes = round(x / scale)."""
    scale = max(abs(v) for v in values) / (2 ** (bits - 1) - 1)
    return scale, [round(v / scale) for v in values]


@dataclass(frozen=True)
class FloatFormat:
    name: str
    exponent_bits: int
    mantissa_bits: int
    ieee_specials: bool  # True: the top exponent is reserved for inf/NaN (E5M2); False: E4M3's scheme

    @property
    def bias(self) -> int:
        return 2 ** (self.exponent_bits - 1) - 1

    @property
    def max_normal(self) -> float:
        top_exponent = 2**self.exponent_bits - 1
        if self.ieee_specials:
            # top exponent field is inf/NaN; the largest finite uses the one below, all mantissa ones
            return 2.0 ** (top_exponent - 1 - self.bias) * (2 - 2.0**-self.mantissa_bits)
        # E4M3: the top exponent holds normal values; only mantissa all-ones there is NaN
        return 2.0 ** (top_exponent - self.bias) * (2 - 2 * 2.0**-self.mantissa_bits)

    @property
    def min_normal(self) -> float:
        return 2.0 ** (1 - self.bias)

    @property
    def min_subnormal(self) -> float:
        return 2.0 ** (1 - self.bias - self.mantissa_bits)

    @property
    def step_at_one(self) -> float:
        """Gap between 1.0 and the next value up: the format's relative precision."""
        return 2.0**-self.mantissa_bits


E4M3 = FloatFormat("E4M3", 4, 3, ieee_specials=False)
E5M2 = FloatFormat("E5M2", 5, 2, ieee_specials=True)


def mla_decompressed_bytes_per_token(s: MLAShape, bytes_per_element: int = 2) -> int:
    """Per-head keys (nope + rope) and values for every head: what MLA would cache without the latent."""
    return s.layers * s.q_heads * (s.qk_nope_head_dim + s.qk_rope_head_dim + s.v_head_dim) * bytes_per_element


def mla_absorbed_flops_per_cached_token(s: MLAShape) -> int:
    """Decode FLOPs per cached token per layer with absorbed weights: every head scores the
    576-wide key (latent + RoPE key) and weights the 512-wide latent as its value."""
    return 2 * s.q_heads * ((s.kv_lora_rank + s.qk_rope_head_dim) + s.kv_lora_rank)


def mla_decompress_flops_per_cached_token(s: MLAShape) -> int:
    """FLOPs per cached token per layer to rebuild every head's key and value from the latent."""
    return 2 * s.kv_lora_rank * s.q_heads * (s.qk_nope_head_dim + s.v_head_dim)


def gqa_attention_intensity(model: ModelShape) -> float:
    """Decode attention FLOPs per byte of cache read: each query head does q.k and p.v over
    head_dim, the cache holds K and V for kv_heads at bytes_per_element."""
    flops = 2 * model.q_heads * 2 * model.head_dim
    cache_bytes = 2 * model.kv_heads * model.head_dim * model.bytes_per_element
    return flops / cache_bytes


def tp_kv_bytes_per_token_per_gpu(model: ModelShape, tp: int) -> int:
    """One token's cache on each GPU under tensor parallelism (KV heads split, or replicated)."""
    heads = im.kv_heads_per_gpu(model.kv_heads, tp)
    return 2 * model.layers * heads * model.head_dim * model.bytes_per_element


def tp_supported(model: ModelShape, tp: int) -> bool:
    """Every dimension tensor parallelism splits must split evenly: the query heads, the MLP's
    intermediate width (column-parallel up/gate, row-parallel down) and the KV heads, which may
    instead replicate evenly when tp exceeds them."""
    if model.q_heads % tp or model.intermediate % tp:
        return False
    try:
        im.kv_heads_per_gpu(model.kv_heads, tp)
    except ValueError:
        return False
    return True


def expert_capacity(tokens: int, top_k: int, experts: int, capacity_factor: float) -> int:
    """Tokens an expert may take in a batch (Switch Transformer): tokens * k / E * capacity factor."""
    return int(tokens * top_k / experts * capacity_factor)

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
from collections.abc import Sequence

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


def acceptance_rate(p: Sequence[float], q: Sequence[float]) -> float:
    """Probability that a draft token sampled from q is accepted by target p: sum of min(p, q)
    (Leviathan et al., section 3.1: alpha = 1 - total variation distance of p and q)."""
    return sum(min(pi, qi) for pi, qi in zip(p, q, strict=True))


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


# --- Kernels, sampling and the cache manager (the content-kernels cards) ---------------------------
# Sources: sliding windows, Jiang et al., 2023, Mistral 7B (arXiv:2310.06825); hybrid local/global
# layers, Gemma Team, 2024, Gemma 2 (arXiv:2408.00118); the log-sum-exp merge, Dao et al., 2023,
# Flash-Decoding for long-context inference; nucleus sampling, Holtzman et al., 2019
# (arXiv:1904.09751); min-p, Nguyen et al., 2024 (arXiv:2407.01082).


def windowed_kv_bytes(
    full_layers: int,
    window_layers: int,
    window: int,
    kv_heads: int,
    head_dim: int,
    seq_len: int,
    bytes_per_element: int,
) -> int:
    """Cache of one sequence when `window_layers` keep only the last `window` tokens.

    Full-attention layers hold every token; sliding-window layers hold min(seq_len, window)
    (a rolling buffer). Mistral-7B-v0.1 is all window layers; Gemma-2 alternates the two.
    """
    per_token_layer = 2 * kv_heads * head_dim * bytes_per_element
    tokens = full_layers * seq_len + window_layers * min(seq_len, window)
    return per_token_layer * tokens


def window_reach(layers: int, window: int) -> int:
    """Tokens back that information can travel through `layers` stacked sliding windows."""
    return layers * window


def prefill_attention_flops(layers: int, q_heads: int, head_dim: int, seq_len: int) -> float:
    """FLOPs of the score (Q K^T) and value (P V) matmuls of one causal prefill.

    Each matmul costs 2 FLOPs per multiply-add over q_heads * head_dim * n^2 / 2 pairs (the
    causal half; the exact count is n (n + 1) / 2, a rounding at long n). The projections and
    the MLP are the 2 * params * n of matmul_flops; this is the part that grows as n^2.
    """
    return 2 * 2 * layers * q_heads * head_dim * seq_len**2 / 2


def logsumexp(scores: list[float]) -> float:
    top = max(scores)
    return top + math.log(sum(math.exp(s - top) for s in scores))


def merge_attention_splits(partials: list[tuple[float, float]]) -> float:
    """Combine per-split (output, log-sum-exp) pairs into the exact softmax-weighted output.

    Split i computed o_i = sum(softmax over its own keys * v) and lse_i = log(sum exp(scores_i)).
    The whole row's lse is log(sum exp(lse_i)); split i's weight is exp(lse_i - lse). Scalar
    values keep the example small; a kernel does the same per output element.
    """
    total = logsumexp([lse for _, lse in partials])
    return sum(out * math.exp(lse - total) for out, lse in partials)


def softmax(logits: list[float], temperature: float = 1.0) -> list[float]:
    """Probabilities of logits / temperature (temperature > 0; greedy is the limit at 0)."""
    if temperature <= 0:
        raise ValueError("temperature must be positive; greedy decoding is argmax")
    scaled = [x / temperature for x in logits]
    top = max(scaled)
    exps = [math.exp(x - top) for x in scaled]
    total = sum(exps)
    return [e / total for e in exps]


def nucleus_size(probs: list[float], top_p: float) -> int:
    """Tokens top-p keeps: the fewest most-likely tokens whose mass reaches top_p."""
    mass, kept = 0.0, 0
    for p in sorted(probs, reverse=True):
        mass += p
        kept += 1
        if mass >= top_p:
            break
    return kept


def min_p_kept(probs: list[float], min_p: float) -> int:
    """Tokens min-p keeps: those with probability at least min_p times the top probability."""
    threshold = min_p * max(probs)
    return sum(1 for p in probs if p >= threshold)


def repetition_penalty(logit: float, penalty: float) -> float:
    """CTRL's penalty on a token already seen: divide a positive logit, multiply a negative one."""
    return logit / penalty if logit > 0 else logit * penalty


def frequency_presence_penalty(logit: float, count: int, frequency: float, presence: float) -> float:
    """OpenAI-style additive penalties: frequency per previous occurrence, presence once if any."""
    return logit - count * frequency - (presence if count > 0 else 0.0)


def reusable_prefix_tokens(shared_tokens: int, block_size: int) -> int:
    """Tokens a block-hashing prefix cache can reuse: only whole blocks are hashed and shared."""
    return shared_tokens // block_size * block_size


def speculative_walltime_speedup(alpha: float, gamma: int, cost_ratio: float) -> float:
    """Expected wall-time improvement of speculative decoding (Leviathan et al., 2023, Theorem 3.8).

    Tokens per round (speculative_expected_tokens) over the round's cost in target-pass units:
    gamma draft passes at `cost_ratio` each plus one target pass, gamma * c + 1. Assumes the
    target verifies gamma + 1 positions in the time of one decode step (memory-bound decode).
    """
    return speculative_expected_tokens(alpha, gamma) / (gamma * cost_ratio + 1)


def pipeline_bubble_fraction(stages: int, microbatches: int) -> float:
    """Share of a pipeline's time that its stages sit idle in one fill-and-drain (GPipe schedule).

    With p stages and m equal micro-batches a pass lasts m + p - 1 slots, of which each stage
    works m: the idle share is (p - 1) / (m + p - 1). Narayanan et al. (2021) quote the same
    bubble as (p - 1) / m of the ideal time.
    """
    return (stages - 1) / (microbatches + stages - 1)


def expected_experts_touched(experts: int, top_k: int, tokens: int) -> float:
    """Expected distinct experts one MoE layer must read for `tokens` tokens under uniform routing.

    A token skips a given expert with probability (experts - top_k) / experts (it picks top_k
    distinct experts); with independent tokens the expert stays unread with that probability
    to the power `tokens`.
    """
    miss = (experts - top_k) / experts
    return experts * (1 - miss**tokens)


def moe_params(
    *,
    layers: int,
    attention_params: int,
    expert_params: int,
    router_params: int,
    embedding_params: int,
    experts: int,
    top_k: int,
) -> tuple[int, int]:
    """(total, active per token) parameters of a Mixtral-style MoE decoder.

    Every layer holds `attention_params` (attention and norms), a router and `experts` MLP experts
    of `expert_params` each, of which `top_k` run per token; the embeddings (and LM head) are
    counted once and always run.
    """
    shared = layers * (attention_params + router_params) + embedding_params
    return shared + layers * experts * expert_params, shared + layers * top_k * expert_params


def ring_allreduce_bytes_per_gpu(message_bytes: float, gpus: int) -> float:
    """Bytes each GPU sends in a ring all-reduce of `message_bytes`: 2 (n - 1) / n of the message.

    Reduce-scatter then all-gather, each n - 1 steps of message / n bytes.
    """
    return 2 * (gpus - 1) / gpus * message_bytes

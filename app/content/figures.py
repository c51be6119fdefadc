"""Every computed figure a card may quote, by name.

Cards declare the figures they state in their front matter (`figures: {name: "512 KiB"}`);
tests/content/test_figures.py recomputes each one here and fails when a card
disagrees. Run `kvprep figures` to print the table.

Model shapes come from the models' config.json files as quoted in the seeds
(GPT-2 small; Llama 2 7B/70B, Mistral 7B v0.1, Llama 3 8B).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from app.content import inference_math as im
from graders.reference.kv_memory import kv_cache_bytes

KIB, MIB, GIB = 2**10, 2**20, 2**30
GPU_80GB_BYTES = 80 * 10**9  # "80 GB" cards are sold in decimal gigabytes


@dataclass(frozen=True)
class ModelShape:
    name: str
    layers: int
    q_heads: int
    kv_heads: int
    hidden: int
    vocab: int
    intermediate: int  # MLP width (gated SwiGLU for Llama/Mistral)
    bytes_per_element: int = 2  # fp16/bf16 unless stated
    head_dim_override: int | None = None  # config.json's head_dim when it is not hidden / heads (Gemma-2)
    n_experts: int = 1  # MLP experts per layer (Mixtral: 8); every expert's weights are in memory
    tied_embeddings: bool = False  # tie_word_embeddings: the LM head reuses the embedding matrix
    norms_per_layer: int = 2  # RMSNorm weight vectors per block (Gemma-2 has four)
    qkv_bias: bool = False  # Qwen2.5 adds biases to the q, k and v projections

    @property
    def head_dim(self) -> int:
        return self.head_dim_override or self.hidden // self.q_heads

    def kv_bytes(self, seq_len: int, batch: int = 1) -> int:
        return kv_cache_bytes(
            self.layers, self.kv_heads, self.head_dim, seq_len, batch, self.bytes_per_element
        )

    def llama_params(self) -> int:
        """Parameters in memory of a Llama-style decoder (gated MLP, RMSNorm), every expert counted.

        q and o are hidden x (q_heads * head_dim); k and v hidden x (kv_heads * head_dim), which
        is hidden x hidden only when head_dim = hidden / heads (not Gemma-2).
        """
        d, q_width, kv_width = self.hidden, self.q_heads * self.head_dim, self.kv_heads * self.head_dim
        attn = 2 * d * q_width + 2 * d * kv_width
        if self.qkv_bias:
            attn += q_width + 2 * kv_width
        mlp = 3 * d * self.intermediate * self.n_experts
        router = d * self.n_experts if self.n_experts > 1 else 0
        per_layer = attn + mlp + router + self.norms_per_layer * d
        embeddings = self.vocab * d * (1 if self.tied_embeddings else 2)
        return self.layers * per_layer + embeddings + d

    def dense_params(self) -> int:
        """The same count with one MLP per layer: a dense model's total, an MoE's without its other
        experts."""
        return replace(self, n_experts=1).llama_params()

    def matmul_params(self) -> int:
        """Parameters a token's forward pass multiplies by: all but the input embedding lookup.

        With tied embeddings the matrix is still multiplied once, by the LM head.
        """
        return self.dense_params() - (0 if self.tied_embeddings else self.vocab * self.hidden)

    def decode_read_bytes(self, bytes_per_param: float = 2) -> float:
        """Weight bytes one decode step reads from HBM: every matrix it multiplies by, once.

        The input embedding table is not among them (a step gathers one row per sequence); a
        tied table is read once, as the LM head. The memory footprint (dense_params) is larger.
        """
        return self.matmul_params() * bytes_per_param

    def layer_params(self) -> int:
        """Parameters inside the decoder blocks: all but the embeddings, the LM head and the final norm."""
        return (
            self.dense_params() - self.vocab * self.hidden * (1 if self.tied_embeddings else 2) - self.hidden
        )

    def prefill_flops(self, prompt: int, cached: int = 0) -> float:
        """The bank's one prefill convention, as engines run it: `prompt - cached` new tokens pass
        through every layer (2 FLOPs per layer parameter per token, plus causal attention's q.k and
        p.v against all `prompt` positions), and the LM head runs once, on the last position, to
        sample the first output token."""
        new = prompt - cached
        attention = im.prefill_attention_flops(self.layers, self.q_heads, self.head_dim, prompt)
        attention -= im.prefill_attention_flops(self.layers, self.q_heads, self.head_dim, cached)
        head = self.vocab * self.hidden
        return im.matmul_flops(self.layer_params(), new) + attention + im.matmul_flops(head, 1)


# The bank's one convention for prefill FLOPs (ModelShape.prefill_flops), in the words every card
# that states a prefill figure carries in its Notes (tests/content/test_prefill_convention.py).
PREFILL_CONVENTION = (
    "Prefill FLOPs on this card follow the bank's one convention, the way serving engines run a "
    "prefill: each new prompt token passes through every layer (2 FLOPs per layer parameter, plus "
    "causal attention's q.k and p.v against the positions before it), and the LM head runs once, "
    "on the last position, to sample the first output token."
)
# Figure names computed from prefill FLOPs: a card declaring one must state the convention.
PREFILL_FIGURE_PREFIXES = (
    "roofline_prefill_ms_",
    "roofline_mfu_example",
    "latency_prefill_",
    "latency_total_",
    "quadratic_attention_share_",
    "quadratic_prefill_ratio_",
    "chunked_qwen_prefill_",
    "chunked_qwen_attention_share_",
    "chunked_qwen_stall_steps",
    "chunked_budget_compute_ms",
    "chunked_70b_prefill_",
    "chunked_70b_transfer_share_",
    "longctx_attn_share_",
    "longctx_prefill_",
    "prefix_prefill_",
    "sched_recompute_ms_",
    "serving_qwen_prefill_",
    "thin_bw_prefill_",
)


GPT2_SMALL = ModelShape("GPT-2 small", 12, 12, 12, 768, 50257, 3072, bytes_per_element=4)
LLAMA2_7B = ModelShape("Llama-2-7B", 32, 32, 32, 4096, 32000, 11008)
MISTRAL_7B = ModelShape("Mistral-7B-v0.1", 32, 32, 8, 4096, 32000, 14336)
LLAMA3_8B = ModelShape("Llama-3-8B", 32, 32, 8, 4096, 128256, 14336)
LLAMA2_70B = ModelShape("Llama-2-70B", 80, 64, 8, 8192, 32000, 28672)

MODELS = {
    "gpt2_small": GPT2_SMALL,
    "llama2_7b": LLAMA2_7B,
    "mistral_7b": MISTRAL_7B,
    "llama3_8b": LLAMA3_8B,
    "llama2_70b": LLAMA2_70B,
}

# Later models, from their config.json on Hugging Face (dense attention shapes only; MoE and
# MLA details live with the figures that need them). Kept apart from MODELS so that the
# numeric generator's draws and the figure names above do not change.
QWEN25_7B = ModelShape("Qwen2.5-7B", 28, 28, 4, 3584, 152064, 18944, qkv_bias=True)
GEMMA2_9B = ModelShape(
    "Gemma-2-9B",
    42,
    16,
    8,
    3584,
    256000,
    14336,
    head_dim_override=256,
    tied_embeddings=True,
    norms_per_layer=4,
)
MIXTRAL_8X7B = ModelShape("Mixtral-8x7B-v0.1", 32, 32, 8, 4096, 32000, 14336, n_experts=8)
LLAMA31_70B = ModelShape("Llama-3.1-70B", 80, 64, 8, 8192, 128256, 28672)
LLAMA31_405B = ModelShape("Llama-3.1-405B", 126, 128, 8, 16384, 128256, 53248)

LATER_MODELS = {
    "qwen25_7b": QWEN25_7B,
    "gemma2_9b": GEMMA2_9B,
    "mixtral_8x7b": MIXTRAL_8X7B,
    "llama31_70b": LLAMA31_70B,
    "llama31_405b": LLAMA31_405B,
}


@dataclass(frozen=True)
class MLAShape:
    """Multi-head latent attention's cache shape (DeepSeek-V2/V3 config.json)."""

    name: str
    layers: int
    kv_lora_rank: int  # the compressed latent c_KV cached per token and layer
    qk_rope_head_dim: int  # the decoupled RoPE key, one per token and layer, shared by all heads
    q_heads: int
    qk_nope_head_dim: int
    v_head_dim: int


# deepseek-ai/DeepSeek-V3 config.json: 61 layers, kv_lora_rank 512, qk_rope_head_dim 64,
# 128 heads of qk_nope_head_dim 128 and v_head_dim 128.
DEEPSEEK_V3 = MLAShape("DeepSeek-V3", 61, 512, 64, 128, 128, 128)


# kvprep's GPT-2 small measurements on a CPU (seed 000), in milliseconds. Quoted on the cards as
# measured; only the ratios below are derived from them.
GPT2_CPU_MS = {
    "prefill_16": 15.3,
    "prefill_960": 219.6,
    "step_min": 8.0,  # "a decode step stayed between 8.0 and 9.6 ms"
    "step_max": 9.6,
    "cached_step_960": 9.6,
    "uncached_step_960": 228.8,
}


def gpt2_small_params() -> int:
    """GPT-2 small's parameters: tied token embedding, learned positions, biases, LayerNorms."""
    d, vocab, positions, layers, ff = 768, 50257, 1024, 12, 3072
    block = (2 * d) + (d * 3 * d + 3 * d) + (d * d + d) + (2 * d) + (d * ff + ff) + (ff * d + d)
    return vocab * d + positions * d + layers * block + 2 * d


def _int(n: int) -> str:
    return f"{n:,}"


def naive_vs_cached_work(prompt_len: int, n_new: int, *, unused_last_step: bool = True) -> dict[str, int]:
    """Work counters of the one-layer NumPy lesson (seed 002): projections and score elements.

    Naive: each of n_new steps re-runs the whole sequence of length t (3t projections, t*t scores).
    Cached: one prefill over the prompt (it yields the first new token), then a decode step per
    further token. The lesson's loop runs n_new decode steps, the last of which computes logits
    nobody reads (unused_last_step=True, its measured 192 and 2,086); a tight loop stops after
    n_new - 1 (unused_last_step=False).
    """
    steps = n_new if unused_last_step else n_new - 1
    naive_lengths = range(prompt_len, prompt_len + n_new)
    cached_lengths = range(prompt_len + 1, prompt_len + steps + 1)
    return {
        "naive_proj": sum(3 * t for t in naive_lengths),
        "naive_scores": sum(t * t for t in naive_lengths),
        "cached_proj": 3 * prompt_len + 3 * steps,
        "cached_scores": prompt_len * prompt_len + sum(cached_lengths),
    }


def compute_figures() -> dict[str, str]:
    """name -> the exact text a card must print for that figure (every area's, merged)."""
    # Imported here: the area modules import ModelShape and the models from this module.
    from app.content import (
        figures_2026,
        figures_2026_thin,
        figures_hardware,
        figures_kernels,
        figures_models,
        figures_serving,
    )

    merged = _model_figures()
    areas = (figures_hardware, figures_models, figures_serving, figures_kernels)
    for area in (*areas, figures_2026, figures_2026_thin):
        for name, text in area.figures().items():
            if name in merged:
                raise ValueError(f"figure {name!r} is defined twice ({area.__name__})")
            merged[name] = text
    return merged


def _model_figures() -> dict[str, str]:
    """The cache-arithmetic figures of the first five models (the KV-cache round)."""
    f: dict[str, str] = {}
    f["gpt2_positions"] = _int(1024)
    f["gpt2_small_kib_per_token_fp32"] = f"{GPT2_SMALL.kv_bytes(1) / KIB:g} KiB"
    f["gpt2_small_gib_1024x64_fp32"] = f"{GPT2_SMALL.kv_bytes(1024, 64) / GIB:.2f} GiB"
    for key, model in MODELS.items():
        if key == "gpt2_small":
            continue
        f[f"{key}_kib_per_token"] = f"{model.kv_bytes(1) / KIB:g} KiB"
        f[f"{key}_gib_4k"] = f"{model.kv_bytes(4096) / GIB:.2f} GiB"
        f[f"{key}_gib_32k"] = f"{model.kv_bytes(32768) / GIB:.2f} GiB"
        f[f"{key}_gib_4k_x32"] = f"{model.kv_bytes(4096, 32) / GIB:.2f} GiB"
    f["llama2_70b_bytes_per_token"] = _int(LLAMA2_70B.kv_bytes(1))
    f["llama2_70b_gib_8000"] = f"{LLAMA2_70B.kv_bytes(8000) / GIB:.2f} GiB"
    f["llama2_70b_gb_8000"] = f"{LLAMA2_70B.kv_bytes(8000) / 1e9:.2f} GB"
    f["llama2_70b_gb_8000_x32"] = f"{LLAMA2_70B.kv_bytes(8000, 32) / 1e9:.1f} GB"
    f["llama2_70b_8000_seqs_80gb"] = _int(GPU_80GB_BYTES // LLAMA2_70B.kv_bytes(8000))
    f["llama2_70b_gqa_factor"] = f"{LLAMA2_70B.q_heads // LLAMA2_70B.kv_heads}x"
    mha_70b = ModelShape("70B MHA", 80, 64, 64, 8192, 32000, 28672)
    mqa_70b = ModelShape("70B MQA", 80, 64, 1, 8192, 32000, 28672)
    f["mha_70b_gib_4k"] = f"{mha_70b.kv_bytes(4096) / GIB:.2f} GiB"
    f["mqa_70b_gib_4k"] = f"{mqa_70b.kv_bytes(4096) / GIB:.2f} GiB"
    f["gpu_80gb_gib"] = f"{GPU_80GB_BYTES / GIB:.1f} GiB"
    for key in ("llama2_7b", "llama3_8b"):
        model = MODELS[key]
        params = model.llama_params()
        weights = params * 2  # fp16
        f[f"{key}_params"] = f"{params / 1e9:.2f}B"
        f[f"{key}_weights_gib_fp16"] = f"{weights / GIB:.1f} GiB"
        f[f"{key}_4k_seqs_80gb"] = _int((GPU_80GB_BYTES - weights) // model.kv_bytes(4096))
        f[f"{key}_4k_seqs_80gb_exact"] = f"{(GPU_80GB_BYTES - weights) / model.kv_bytes(4096):.1f}"
    for n in (1024, 4096, 32768, 131072):
        f[f"score_entries_{n}"] = _int(n * n)
        f[f"score_fp16_mib_{n}"] = f"{_int(n * n * 2 // MIB)} MiB"
    f["prefill_ratio_1m_vs_32k"] = _int((2**20 // 32768) ** 2)
    f["cache_ratio_1m_vs_32k"] = _int(2**20 // 32768)
    work = naive_vs_cached_work(4, 60)
    for name, value in work.items():
        f[f"lesson_{name}_4_60"] = _int(value)
    tight = naive_vs_cached_work(4, 60, unused_last_step=False)
    f["lesson_cached_proj_4_60_tight"] = _int(tight["cached_proj"])
    f["lesson_cached_scores_4_60_tight"] = _int(tight["cached_scores"])
    f["lesson_proj_ratio_4_60_tight"] = f"{tight['naive_proj'] / tight['cached_proj']:.0f}x"
    f["lesson_scores_ratio_4_60_tight"] = f"{tight['naive_scores'] / tight['cached_scores']:.0f}x"
    long = naive_vs_cached_work(2000, 500, unused_last_step=False)
    naive_tokens, cached_tokens = long["naive_proj"] // 3, long["cached_proj"] // 3  # token-projections
    f["naive_proj_2000_500"] = _int(naive_tokens)
    f["cached_proj_2000_500"] = _int(cached_tokens)  # prefill 2,000 + 499 decode steps
    f["naive_vs_cached_ratio_2000_500"] = f"{naive_tokens / cached_tokens:.0f}x"
    # A naive step at length t pushes t tokens through the projections; a cached step pushes one.
    # The naive loop's first step (2,000 tokens) is the prefill's counterpart; the first decode
    # step it is compared with is its second, over 2,001 tokens.
    f["naive_step_ratio_2000_500_first"] = f"{_int((2000 + 1) // 1)}x"
    f["naive_step_ratio_2000_500_last"] = f"{_int((2000 + 500 - 1) // 1)}x"
    cpu = GPT2_CPU_MS
    f["gpt2_cpu_prefill_ratio_960_vs_16"] = f"{cpu['prefill_960'] / cpu['prefill_16']:.1f}x"
    f["gpt2_cpu_prompt_ratio_960_vs_16"] = f"{960 // 16}x"
    f["gpt2_cpu_prefill_ms_per_token_16"] = f"{cpu['prefill_16'] / 16:.2f} ms"
    f["gpt2_cpu_prefill_ms_per_token_960"] = f"{cpu['prefill_960'] / 960:.2f} ms"
    f["gpt2_cpu_cached_speedup_960"] = f"{cpu['uncached_step_960'] / cpu['cached_step_960']:.0f}x"
    # Re-running 16 tokens costs about their prefill; against the fastest and slowest cached step.
    f["gpt2_cpu_short_speedup_max"] = f"{cpu['prefill_16'] / cpu['step_min']:.1f}x"
    f["gpt2_cpu_short_speedup_min"] = f"{cpu['prefill_16'] / cpu['step_max']:.1f}x"
    f["gpt2_small_params"] = f"{gpt2_small_params() / 1e6:.0f}M"
    f["gpt2_small_weights_mb_fp32"] = f"{gpt2_small_params() * 4 / 1e6:.0f} MB"
    f["gpt2_small_cache_vs_weights"] = f"{GPT2_SMALL.kv_bytes(1024, 64) / (gpt2_small_params() * 4):.1f}x"
    return f

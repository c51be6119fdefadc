"""The model shapes every figure, calculator and numeric question computes from.

One frozen dataclass per kind of attention (ModelShape for MHA/GQA/MQA decoders, MLAShape for
DeepSeek's latent attention) and one constant per model, each from its config.json as quoted in
the seeds or on Hugging Face. The figures_* modules, the calculator and the numeric generators
import them from here; nothing here imports a figures module.
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

# Later models, from their config.json on Hugging Face (MHA/GQA shapes; DeepSeek's latent
# attention is MLAShape below). Kept apart from MODELS so that the numeric generator's draws and
# the figure names computed from MODELS do not change.
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
    """The fields of a DeepSeek-V2/V3 config.json that the MLA, expert-parallel and MoE figures use:
    multi-head latent attention's cache shape and the routed-expert layout."""

    name: str
    layers: int  # num_hidden_layers (DeepSeek-V3's MTP module, a 62nd layer, drafts only)
    q_heads: int  # num_attention_heads
    hidden: int  # hidden_size
    kv_lora_rank: int  # d_c, the compressed latent c_KV cached per token and layer
    qk_rope_head_dim: int  # the decoupled RoPE key, one per token and layer, shared by all heads
    qk_nope_head_dim: int  # each head's key part, rebuilt from the latent
    v_head_dim: int
    routed_experts: int  # n_routed_experts
    experts_per_token: int  # num_experts_per_tok
    dense_layers: int  # first_k_dense_replace: layers with a dense MLP instead of experts


# deepseek-ai/DeepSeek-V3 config.json.
DEEPSEEK_V3 = MLAShape(
    "DeepSeek-V3",
    layers=61,
    q_heads=128,
    hidden=7168,
    kv_lora_rank=512,
    qk_rope_head_dim=64,
    qk_nope_head_dim=128,
    v_head_dim=128,
    routed_experts=256,
    experts_per_token=8,
    dense_layers=3,
)

"""Figures of the 2026 topics: Blackwell, low-precision formats, hybrid and linear-attention
models, sparse attention and modern speculative decoding.

Merged into app.content.figures.compute_figures(); a name defined twice is an error. Names are
prefixed by topic: `bw_` (blackwell), `lp_` (low-precision-formats), `hyb_`
(hybrid-linear-attention), `sparse_` (sparse-attention), `spec26_`
(speculative-decoding-modern).

The byte convention: a decode step reads the weights it multiplies by (`matmul_params()`: every
parameter but the input embedding table, which a step only gathers one row of; a tied table is
read once, as the LM head). Sizes in GB are decimal, like the data sheets' bandwidths; cache
sizes in GiB are binary, as on the KV-memory cards.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.content.hardware import (
    B200_SXM,
    BLACKWELL_FP8_FP4,
    GB200_GPU,
    H100_FP8_FLOPS,
    H100_SXM,
    H200_SXM,
)
from app.content.shapes import DEEPSEEK_V3, GIB, KIB, LLAMA3_8B, LLAMA31_70B, MIB, ModelShape

MB = 10**6


def decode_weight_bytes(model: ModelShape, bits_per_param: float) -> float:
    """Bytes one decode step reads for the weights: every multiplied parameter once."""
    return model.matmul_params() * bits_per_param / 8


# OCP Microscaling Formats (MX) v1.0: MXFP4 = 32 FP4 (E2M1) elements sharing one E8M0 scale.
# NVIDIA NVFP4: 16 E2M1 elements sharing one E4M3 scale, plus one FP32 scale per tensor.
MXFP4_BITS = 4 + 8 / 32
NVFP4_BITS = 4 + 8 / 16
FP8_E4M3_MAX = 448  # S.1111.110 = 1.75 x 2^8 (E4M3 drops infinities to keep this code)
FP8_E5M2_MAX = 57344  # S.11110.11 = 1.75 x 2^15 (IEEE-style, keeps inf and NaN)
DEEPSEEK_V3_TOTAL_PARAMS = 671e9  # DeepSeek-V3 report: 671B total parameters, 37B activated
DEEPSEEK_V3_MOE_INTERMEDIATE = 2048  # config.json moe_intermediate_size: one routed expert's width
# DeepSeek-V3 report, section 3.3: FP8 GEMMs promote partial sums to FP32 every N_C = 128 elements
# of K, the length of one activation tile and one weight block along K.
FP8_GROUP = 128


@dataclass(frozen=True)
class RecurrentShape:
    """What a recurrent (SSM or linear-attention) layer keeps per sequence, from config.json.

    state_elements: the matrix state of one layer (heads x head_dim x d_state for Mamba-2, heads x
    d_k x d_v for Gated DeltaNet); conv_channels x (conv_kernel - 1): the short convolution's
    last inputs, which the next token's convolution needs.
    """

    name: str
    recurrent_layers: int
    state_elements: int
    conv_channels: int
    conv_kernel: int
    attention_layers: int = 0
    kv_heads: int = 0
    head_dim: int = 0

    def state_bytes(self, bytes_per_element: int = 2) -> int:
        conv = self.conv_channels * (self.conv_kernel - 1)
        return self.recurrent_layers * (self.state_elements + conv) * bytes_per_element

    def kv_bytes_per_token(self, bytes_per_element: int = 2) -> int:
        return 2 * self.attention_layers * self.kv_heads * self.head_dim * bytes_per_element


# state-spaces/mamba2-2.7b: d_model 2560, n_layer 64, Mamba2 defaults d_state 128, expand 2
# (d_inner 5120), headdim 64 (80 heads), ngroups 1, d_conv 4; conv over x, B and C:
# 5120 + 2 * 128 channels.
MAMBA2_27B = RecurrentShape("Mamba-2 2.7B", 64, 80 * 64 * 128, 5120 + 2 * 128, 4)
# ai21labs/Jamba-v0.1: 32 layers, attention every 8th (4 layers, 8 KV heads of 128), 28 Mamba
# layers with d_state 16, expand 2 (d_inner 8192), d_conv 4.
JAMBA = RecurrentShape("Jamba-v0.1", 28, 8192 * 16, 8192, 4, attention_layers=4, kv_heads=8, head_dim=128)
# Qwen/Qwen3-Next-80B-A3B: 48 layers, full_attention_interval 4 (12 gated-attention layers,
# 2 KV heads of 256); 36 Gated DeltaNet layers with 16 QK heads and 32 V heads of 128, one
# 128 x 128 state per V head; conv over q, k and v: 2 * 16 * 128 + 32 * 128 channels, kernel 4.
QWEN3_NEXT = RecurrentShape(
    "Qwen3-Next-80B-A3B",
    36,
    32 * 128 * 128,
    2 * 16 * 128 + 32 * 128,
    4,
    attention_layers=12,
    kv_heads=2,
    head_dim=256,
)
JAMBA_CONTEXT = 262144  # max_position_embeddings of Jamba-v0.1 (256K)


def _x(v: float, places: int = 2) -> str:
    return f"{v:.{places}f}x"


def _gb(v: float, places: int = 1) -> str:
    return f"{v / 1e9:.{places}f} GB"


def _ms(seconds: float, places: int = 2) -> str:
    return f"{seconds * 1e3:.{places}f} ms"


def figures() -> dict[str, str]:
    f: dict[str, str] = {}
    f.update(_blackwell())
    f.update(_low_precision())
    f.update(_hybrid())
    f.update(_sparse())
    f.update(_speculative())
    return f


def _blackwell() -> dict[str, str]:
    f: dict[str, str] = {}
    b200_fp8, b200_fp4 = BLACKWELL_FP8_FP4[B200_SXM.name]
    f["bw_ridge_b200"] = f"{B200_SXM.ridge_flops_per_byte:.0f} FLOP/byte"
    f["bw_ridge_gb200"] = f"{GB200_GPU.ridge_flops_per_byte:.1f} FLOP/byte"
    f["bw_ridge_b200_fp8"] = f"{b200_fp8 / B200_SXM.hbm_bytes_per_s:.1f} FLOP/byte"
    f["bw_ridge_b200_fp4"] = f"{b200_fp4 / B200_SXM.hbm_bytes_per_s:,.0f} FLOP/byte"
    f["bw_ridge_h100_fp8"] = f"{H100_FP8_FLOPS / H100_SXM.hbm_bytes_per_s:.0f} FLOP/byte"
    f["bw_b200_vs_h100_bandwidth"] = _x(B200_SXM.hbm_bytes_per_s / H100_SXM.hbm_bytes_per_s)
    f["bw_b200_vs_h200_bandwidth"] = _x(B200_SXM.hbm_bytes_per_s / H200_SXM.hbm_bytes_per_s)
    f["bw_b200_vs_h100_bf16"] = _x(B200_SXM.bf16_flops / H100_SXM.bf16_flops)
    # Llama-3.1-70B decode at batch 1: the weight read is the floor on time per token.
    for label, bits in (("bf16", 16), ("fp8", 8), ("nvfp4", NVFP4_BITS)):
        weights = decode_weight_bytes(LLAMA31_70B, bits)
        f[f"bw_llama31_70b_{label}_gb"] = _gb(weights)
        for gpu_label, gpu in (("b200", B200_SXM), ("h200", H200_SXM)):
            seconds = weights / gpu.hbm_bytes_per_s
            f[f"bw_llama31_70b_{label}_ms_{gpu_label}"] = _ms(seconds)
            f[f"bw_llama31_70b_{label}_tps_{gpu_label}"] = f"{1 / seconds:.0f} tokens/s"
    fp8_70b = decode_weight_bytes(LLAMA31_70B, 8)
    f["bw_b200_free_after_70b_fp8_gb"] = _gb(B200_SXM.hbm_bytes - fp8_70b, 0)
    f["bw_llama31_70b_fp8_ms_h100_tp2"] = _ms(fp8_70b / 2 / H100_SXM.hbm_bytes_per_s)
    # DeepSeek-V3 in FP8 (1 byte per parameter) against eight-GPU nodes.
    v3 = DEEPSEEK_V3_TOTAL_PARAMS
    f["bw_v3_fp8_gb"] = _gb(v3, 0)
    for label, gpu in (("h100", H100_SXM), ("h200", H200_SXM), ("b200", B200_SXM)):
        node = 8 * gpu.hbm_bytes
        f[f"bw_node_gb_{label}"] = f"{node / 1e9:,.0f} GB"
        if node >= v3:
            f[f"bw_v3_fp8_free_gb_{label}"] = f"{(node - v3) / 1e9:,.0f} GB"
        else:
            f[f"bw_v3_fp8_short_gb_{label}"] = f"{(v3 - node) / 1e9:,.0f} GB"
    f["bw_nvl72_gpus_hbm_tb"] = f"{72 * GB200_GPU.hbm_bytes / 1e12:.1f} TB"
    # NVLink 5 per direction against one 400 Gb/s NIC per GPU (50 GB/s per direction).
    f["bw_nvlink5_per_direction"] = "900 GB/s"
    f["bw_nvlink5_vs_nic"] = f"{900e9 / 50e9:.0f}x"
    return f


def _low_precision() -> dict[str, str]:
    f: dict[str, str] = {}
    f["lp_e4m3_max"] = f"{FP8_E4M3_MAX:,}"
    f["lp_e5m2_max"] = f"{FP8_E5M2_MAX:,}"
    f["lp_mxfp4_bits"] = f"{MXFP4_BITS:g}"
    f["lp_nvfp4_bits"] = f"{NVFP4_BITS:g}"
    f["lp_mxfp4_scale_overhead"] = f"{(MXFP4_BITS - 4) / 4:.2%}".replace(".00%", "%")
    f["lp_nvfp4_scale_overhead"] = f"{(NVFP4_BITS - 4) / 4:.1%}"
    for label, bits in (("bf16", 16), ("fp8", 8), ("mxfp4", MXFP4_BITS), ("nvfp4", NVFP4_BITS)):
        f[f"lp_llama31_70b_{label}_gb"] = _gb(decode_weight_bytes(LLAMA31_70B, bits))
    gap = decode_weight_bytes(LLAMA31_70B, NVFP4_BITS) - decode_weight_bytes(LLAMA31_70B, MXFP4_BITS)
    f["lp_nvfp4_minus_mxfp4_gb"] = _gb(gap)
    # DeepSeek-V3's FP8 recipe: one FP32 scale per 128 x 128 weight block and per 1 x 128
    # activation tile, against the FP8 bytes they scale.
    f["lp_block_scale_overhead_weights"] = f"{4 / (128 * 128):.3%}"
    f["lp_tile_scale_overhead_acts"] = f"{4 / 128:.1%}"
    # One output element of a GEMM over DeepSeek-V3's hidden size (K = 7,168): a 128-long chunk of K
    # per tensor-core partial sum, each scaled by its tile's and block's scales and added in FP32.
    k = DEEPSEEK_V3.hidden
    f["lp_v3_k_chunks"] = f"{k // FP8_GROUP}"
    # One routed expert's up projection, 7,168 x 2,048 FP8 weights in 128 x 128 blocks.
    blocks = (k // FP8_GROUP) * (DEEPSEEK_V3_MOE_INTERMEDIATE // FP8_GROUP)
    f["lp_v3_expert_up_blocks"] = f"{blocks:,}"
    f["lp_v3_expert_up_scale_kib"] = f"{blocks * 4 / KIB:g} KiB"
    f["lp_v3_expert_up_mib_fp8"] = f"{k * DEEPSEEK_V3_MOE_INTERMEDIATE / MIB:g} MiB"
    # A token's activation row at the same K: one FP32 scale per 1 x 128 tile.
    f["lp_v3_token_scale_bytes"] = f"{k // FP8_GROUP * 4} bytes"
    # An FP8 KV cache (per-tensor k_scale and v_scale) halves the BF16 one.
    per_token = LLAMA31_70B.kv_bytes(1)
    f["lp_llama31_70b_kv_kib_bf16"] = f"{per_token / KIB:g} KiB"
    f["lp_llama31_70b_kv_kib_fp8"] = f"{per_token / 2 / KIB:g} KiB"
    f["lp_llama31_70b_kv_gib_128k_fp8"] = f"{LLAMA31_70B.kv_bytes(131072) / 2 / GIB:.2f} GiB"
    f["lp_llama31_70b_kv_gib_128k_bf16"] = f"{LLAMA31_70B.kv_bytes(131072) / GIB:.2f} GiB"
    return f


def _hybrid() -> dict[str, str]:
    f: dict[str, str] = {}
    mamba = MAMBA2_27B.state_bytes()
    f["hyb_mamba2_27b_state_elements_per_layer"] = f"{MAMBA2_27B.state_elements:,}"
    f["hyb_mamba2_27b_state_mb"] = f"{mamba / MB:.1f} MB"
    f["hyb_mamba2_27b_state_mb_per_layer"] = f"{mamba / MAMBA2_27B.recurrent_layers / MB:.2f} MB"
    f["hyb_mamba2_27b_state_mb_fp32"] = f"{MAMBA2_27B.state_bytes(4) / MB:.1f} MB"
    llama3_per_token = LLAMA3_8B.kv_bytes(1)
    f["hyb_llama3_8b_kib_per_token"] = f"{llama3_per_token / KIB:g} KiB"
    f["hyb_mamba2_state_as_llama3_tokens"] = f"{mamba / llama3_per_token:,.0f}"
    f["hyb_llama3_8b_gib_32k"] = f"{LLAMA3_8B.kv_bytes(32768) / GIB:.2f} GiB"
    f["hyb_mamba2_vs_llama3_32k"] = f"{LLAMA3_8B.kv_bytes(32768) / mamba:.0f}x"
    # Prefix caching a recurrent model: a state snapshot every 16-token block.
    f["hyb_mamba2_snapshot_mb_per_token_b16"] = f"{mamba / 16 / MB:.2f} MB"
    f["hyb_mamba2_snapshot_vs_kv"] = f"{mamba / 16 / llama3_per_token:.0f}x"
    # Jamba: 4 attention layers of 32.
    jamba_token = JAMBA.kv_bytes_per_token()
    all_attention = 2 * 32 * JAMBA.kv_heads * JAMBA.head_dim * 2
    f["hyb_jamba_kib_per_token"] = f"{jamba_token / KIB:g} KiB"
    f["hyb_jamba_gib_256k"] = f"{jamba_token * JAMBA_CONTEXT / GIB:.2f} GiB"
    f["hyb_jamba_all_attention_gib_256k"] = f"{all_attention * JAMBA_CONTEXT / GIB:.2f} GiB"
    f["hyb_jamba_kv_saving"] = f"{all_attention / jamba_token:.0f}x"
    f["hyb_jamba_state_mb"] = f"{JAMBA.state_bytes() / MB:.2f} MB"
    # Qwen3-Next: 12 gated-attention layers of 48.
    q3 = QWEN3_NEXT
    q3_token = q3.kv_bytes_per_token()
    q3_all = 2 * 48 * q3.kv_heads * q3.head_dim * 2
    f["hyb_qwen3_next_kib_per_token"] = f"{q3_token / KIB:g} KiB"
    f["hyb_qwen3_next_all_attention_kib_per_token"] = f"{q3_all / KIB:g} KiB"
    f["hyb_qwen3_next_gib_256k"] = f"{q3_token * 262144 / GIB:.2f} GiB"
    f["hyb_qwen3_next_state_mb"] = f"{q3.state_bytes() / MB:.1f} MB"
    f["hyb_qwen3_next_state_elements_per_layer"] = f"{q3.state_elements:,}"
    f["hyb_qwen3_next_state_as_tokens"] = f"{q3.state_bytes() / q3_token:,.0f}"
    return f


# DeepSeek-V3.2-Exp: MLA's latent (512 + 64 elements, BF16 here) per token and layer, and the
# lightning indexer's key (128 dimensions in FP8) per token and layer; top-k = 2048 tokens.
DSA_TOP_K = 2048
DSA_CONTEXT = 131072
MLA_BYTES_PER_TOKEN_LAYER = (512 + 64) * 2
INDEXER_BYTES_PER_TOKEN_LAYER = 128
QUEST_PAGE = 16  # tokens per page; Quest keeps an elementwise min and max key per page
QUEST_CONTEXT, QUEST_BUDGET = 32768, 2048


def _sparse() -> dict[str, str]:
    f: dict[str, str] = {}
    f["sparse_dsa_entries_ratio_128k"] = f"{DSA_CONTEXT // DSA_TOP_K}x"
    dense = DSA_CONTEXT * MLA_BYTES_PER_TOKEN_LAYER
    sparse = DSA_CONTEXT * INDEXER_BYTES_PER_TOKEN_LAYER + DSA_TOP_K * MLA_BYTES_PER_TOKEN_LAYER
    f["sparse_mla_bytes_per_token_layer"] = f"{MLA_BYTES_PER_TOKEN_LAYER:,}"
    f["sparse_dense_mb_per_layer_128k"] = f"{dense / MB:.1f} MB"
    f["sparse_indexer_mb_per_layer_128k"] = f"{DSA_CONTEXT * INDEXER_BYTES_PER_TOKEN_LAYER / MB:.1f} MB"
    f["sparse_selected_mb_per_layer"] = f"{DSA_TOP_K * MLA_BYTES_PER_TOKEN_LAYER / MB:.2f} MB"
    f["sparse_dsa_mb_per_layer_128k"] = f"{sparse / MB:.1f} MB"
    f["sparse_dsa_read_ratio_128k"] = f"{dense / sparse:.1f}x"
    # Quest, per head: reading a page's min and max keys, then the K and V of the chosen pages.
    pages = QUEST_CONTEXT // QUEST_PAGE
    full_vectors = 2 * QUEST_CONTEXT
    quest_vectors = 2 * pages + 2 * QUEST_BUDGET
    f["sparse_quest_pages_32k"] = f"{pages:,}"
    f["sparse_quest_read_ratio"] = f"{full_vectors / quest_vectors:.0f}x"
    f["sparse_quest_metadata_share"] = f"{2 / (2 * QUEST_PAGE):.2%}"
    return f


# Modern speculation. MTP: DeepSeek-V3 predicts one extra token, accepted 85-90% of the time.
MTP_ACCEPTANCE = (0.85, 0.90)
EAGLE_EXAMPLE_ACCEPTANCE = (0.8, 0.7, 0.6, 0.5)  # per drafted position, falling along the chain
# MagicDec-style check: Llama-3-8B, batch 32 at 8,192 cached tokens, 3 drafted tokens, one H100.
MAGIC_BATCH, MAGIC_CONTEXT, MAGIC_GAMMA = 32, 8192, 3


def expected_accepted(acceptance: tuple[float, ...]) -> float:
    """Tokens per target pass for a chain draft whose i-th token is accepted with probability
    acceptance[i] given that the ones before it were: 1 + a1 + a1*a2 + ... (the +1 is the
    target's own token at the first rejection, or the bonus token after a full accept)."""
    total, run = 1.0, 1.0
    for a in acceptance:
        run *= a
        total += run
    return total


def _speculative() -> dict[str, str]:
    f: dict[str, str] = {}
    low, high = MTP_ACCEPTANCE
    f["spec26_mtp_tokens_low"] = f"{expected_accepted((low,)):.2f}"
    f["spec26_mtp_tokens_high"] = f"{expected_accepted((high,)):.2f}"
    for i, a in enumerate(EAGLE_EXAMPLE_ACCEPTANCE, start=1):
        f[f"spec26_eagle_example_a{i}"] = f"{a:.0%}"
    f["spec26_eagle_example_tokens"] = f"{expected_accepted(EAGLE_EXAMPLE_ACCEPTANCE):.3f}"
    f["spec26_eagle_example_prefix_3"] = f"{expected_accepted(EAGLE_EXAMPLE_ACCEPTANCE[:3]):.3f}"
    m = LLAMA3_8B
    weights = decode_weight_bytes(m, 16)
    cache = m.kv_bytes(MAGIC_CONTEXT, MAGIC_BATCH)
    queries = MAGIC_BATCH * (MAGIC_GAMMA + 1)
    linear_flops = 2 * m.matmul_params() * queries
    attn_flops = 4 * MAGIC_CONTEXT * m.q_heads * m.head_dim * m.layers * queries
    total_flops = linear_flops + attn_flops
    f["spec26_magic_weights_gb"] = _gb(weights)
    f["spec26_magic_cache_gb"] = _gb(cache)
    f["spec26_magic_read_ms"] = _ms((weights + cache) / H100_SXM.hbm_bytes_per_s, 1)
    f["spec26_magic_verify_tflop"] = f"{total_flops / 1e12:.2f} TFLOP"
    f["spec26_magic_compute_ms"] = _ms(total_flops / H100_SXM.bf16_flops)
    f["spec26_magic_intensity"] = f"{total_flops / (weights + cache):.0f} FLOP/byte"
    f["spec26_magic_cache_share"] = f"{cache / (weights + cache):.0%}"
    return f

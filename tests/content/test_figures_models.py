"""The model-side figures (figures_models.py) and their formulas (model_math.py) against values worked
by hand."""

from __future__ import annotations

import dataclasses

import pytest

from app.content import figures_models as fm
from app.content import inference_math as im
from app.content import model_math as mm
from app.content.shapes import DEEPSEEK_V3, LATER_MODELS

FIG = fm.figures()


def test_speculative_example_recovers_the_target_distribution() -> None:
    p, q = (0.5, 0.3, 0.2), (0.2, 0.6, 0.2)
    assert im.acceptance_rate(p, q) == pytest.approx(0.7)  # 0.2 + 0.3 + 0.2
    assert mm.accept_probabilities(p, q) == pytest.approx([1.0, 0.5, 1.0])
    assert mm.residual_distribution(p, q) == pytest.approx([1.0, 0.0, 0.0])
    assert mm.speculative_output_distribution(p, q) == pytest.approx(list(p))
    # Any draft gives back the target, including one that disagrees everywhere it can.
    other = (0.05, 0.05, 0.9)
    assert mm.speculative_output_distribution(p, other) == pytest.approx(list(p))
    assert mm.speculative_output_distribution(p, p) == pytest.approx(list(p))


def test_best_draft_length_by_hand() -> None:
    # alpha 0.8, c 0.05: speed-ups 2.80 at gamma 4, 3.08 at 7, 3.09 at 8, 3.08 at 9.
    assert mm.best_draft_length(0.8, 0.05) == 8
    # alpha 0.8, c 0.2: 1.85 at 3, 1.87 at 4, 1.84 at 5.
    assert mm.best_draft_length(0.8, 0.2) == 4
    assert FIG["spec_speedup_a08_c05_g4"] == "2.80x"
    assert FIG["spec_tokens_a08_g4"] == "3.36"


def test_draft_costs_by_weight_bytes() -> None:
    # Bytes a step reads (not the input embedding tables): Llama-3-8B's 7.50B over Llama-3.1-70B's
    # 69.50B; one 70B layer plus its LM head: 1.91B / 69.50B.
    assert FIG["spec_draft_cost_8b_for_70b"] == "10.8%"
    assert FIG["spec_draft_cost_one_layer_70b"] == "2.7%"
    assert (
        mm.layer_params(LATER_MODELS["llama31_70b"])
        == 2 * 8192 * 8192 + 2 * 8192 * 1024 + 3 * 8192 * 28672 + 2 * 8192
    )


def test_fp8_formats() -> None:
    assert mm.E4M3.max_normal == 448  # 2^8 x 1.75
    assert mm.E5M2.max_normal == 57344  # 2^15 x 1.75
    assert mm.E4M3.min_subnormal == 2.0**-9 and mm.E5M2.min_subnormal == 2.0**-16
    assert mm.E4M3.min_normal == 2.0**-6 and mm.E5M2.min_normal == 2.0**-14
    assert (mm.E4M3.step_at_one, mm.E5M2.step_at_one) == (0.125, 0.25)


def test_group_quantisation_and_weight_bytes() -> None:
    assert mm.group_quant_bits(4, 128) == 4.125
    assert mm.group_quant_bits(4, 128, zero_bits=16) == 4.25
    assert mm.group_quant_bits(8, 64, scale_bits=32) == 8.5
    assert FIG["quant_70b_bf16_gb"] == "141.1 GB"
    assert "quant_70b_bf16_ms_h100" not in FIG  # 141 GB of weights do not fit on one 80 GB card
    # (70.55B - the 1.05B input embedding table) x 4.125 bits = 35.8 GB read / 3.35 TB/s.
    assert FIG["quant_70b_int4_ms_h100"] == "10.7 ms"


def test_quantised_kv_cache_of_llama31_70b() -> None:
    # 163,840 elements per token: int8 adds 1,280 fp16 scales (2,560 B); 2-bit with group 32 adds
    # 5,120 groups x 4 B of scale and zero point.
    assert FIG["quant_kv_70b_int8_kib"] == "162.5 KiB"  # (163,840 + 2,560) / 1,024
    assert FIG["quant_kv_70b_2bit_kib"] == "60 KiB"  # (40,960 + 20,480) / 1,024
    assert FIG["quant_kv_70b_2bit_ratio"] == "5.33x"


def test_mla_cache_of_deepseek_v3() -> None:
    s = DEEPSEEK_V3
    assert mm.mla_decompressed_bytes_per_token(s) == 61 * 128 * (128 + 64 + 128) * 2
    assert FIG["mla_v3_bytes_per_token"] == "70,272"  # 61 x 576 x 2
    assert FIG["mla_v3_kib_per_token"] == "68.6 KiB"
    assert FIG["mla_v3_gqa_equivalent_groups"] == "2.25"
    assert mm.mla_absorbed_flops_per_cached_token(s) == 2 * 128 * (576 + 512)
    assert mm.mla_decompress_flops_per_cached_token(s) == 2 * 512 * 128 * 256
    # 278,528 FLOPs over 1,152 bytes of latent; GQA 70B: 64 heads x 512 FLOPs over 4,096 bytes.
    assert FIG["mla_decode_intensity"] == "242 FLOP/byte"
    assert mm.gqa_attention_intensity(LATER_MODELS["llama31_70b"]) == 8
    # Under TP=8 the latent is copied to all eight ranks: 8 x 70,272 B = 549.0 KiB, while
    # Llama-3.1-70B keeps one KV head (40 KiB) per GPU: 68.625 / 40 = 1.72.
    assert FIG["mla_v3_tp8_total_kib"] == "549.0 KiB"
    assert FIG["mla_v3_tp8_vs_gqa_per_gpu"] == "1.72x"


def test_tensor_parallel_cache_per_gpu() -> None:
    m70 = LATER_MODELS["llama31_70b"]
    assert mm.tp_kv_bytes_per_token_per_gpu(m70, 8) == 2 * 80 * 1 * 128 * 2
    assert mm.tp_kv_bytes_per_token_per_gpu(m70, 16) == mm.tp_kv_bytes_per_token_per_gpu(m70, 8)
    qwen = LATER_MODELS["qwen25_7b"]
    assert mm.tp_supported(qwen, 4) and not mm.tp_supported(qwen, 8) and not mm.tp_supported(qwen, 7)
    # 28 divides the 28 query heads and replicates the 4 KV heads evenly, but the MLP's 18,944
    # = 2^9 x 37 columns do not split 28 ways: every split dimension must divide.
    assert not mm.tp_supported(qwen, 28) and 18944 % 28 and not 28 % 4 and not 28 % 28
    assert FIG["parallel_qwen_tp_options"] == "1, 2, 4"
    # Llama-3.1-70B: 64 heads, 8 KV heads, 28,672 = 2^12 x 7 columns; TP 16 replicates KV heads.
    assert [t for t in (2, 4, 8, 16, 32, 7) if mm.tp_supported(m70, t)] == [2, 4, 8, 16, 32]
    odd_mlp = dataclasses.replace(m70, intermediate=28672 + 8)  # 28,680 = 2^3 x 3,585
    assert mm.tp_supported(odd_mlp, 8) and not mm.tp_supported(odd_mlp, 16)
    assert FIG["parallel_70b_128k_seqs_tp8"] == "11"  # (80 - 17.6) GB / 5.37 GB


def test_mixtral_parameters_match_the_published_counts() -> None:
    # Mistral AI: 46.7B total, 12.9B used per token.
    assert FIG["moe_mixtral_total_params"] == "46.7B"
    assert FIG["moe_mixtral_active_params"] == "12.9B"
    assert FIG["moe_mixtral_experts_touched_b4"] == "5.47"  # 8 x (1 - 0.75^4)
    assert FIG["moe_mixtral_crossover_batch"] == "1,181"  # 295.2 tokens per expert x 8 / 2
    assert mm.expert_capacity(4096, 2, 8, 1.25) == 1280


def test_symmetric_quantization_example() -> None:
    scale, codes = mm.quantize_symmetric((0.12, -0.26, 0.31, 12.7))
    assert scale == pytest.approx(0.1)  # 12.7 / 127
    assert codes == [1, -3, 3, 127]
    assert mm.quantize_symmetric((1.0, -0.5), bits=4) == (pytest.approx(1 / 7), [7, -4])
    assert FIG["quant_example_scale_no_outlier"] == "0.00244"  # 0.31 / 127
    assert FIG["quant_example_step_ratio"] == "41x"

"""The kernel and cache-manager figures against values worked by hand."""

from __future__ import annotations

from app.content import figures_kernels as fk

F = fk.figures()


def test_every_name_has_a_topic_prefix() -> None:
    prefixes = ("swa_", "sinks_", "longctx_", "sampling_", "fa2_", "fa3_", "flashdec_", "paged_")
    prefixes += ("prefix_", "sched_", "evict_", "batchinv_", "mask_")
    assert all(name.startswith(prefixes) for name in F)


def test_sliding_windows() -> None:
    # 32 layers x 4,096 window; 32,768 / 4,096 = 8 times fewer cached tokens.
    assert F["swa_mistral_reach"] == "131,072"
    assert F["swa_mistral_saving_32k"] == "8x"
    # 128 KiB x 32,768 tokens x 32 sequences = 128 GiB; the window keeps 4,096 tokens.
    assert F["swa_mistral_gib_32k_x32_full"] == "128.00 GiB"
    assert F["swa_mistral_gib_32k_x32_rolled"] == "16.00 GiB"
    assert F["swa_rolling_slot_10000"] == "1,808"  # 10,000 - 2 x 4,096
    # Llama-2-7B: 512 KiB a token; 4 sinks are 2 MiB, 2,048 tokens 1 GiB.
    assert F["sinks_llama2_7b_sink_mib"] == "2 MiB"
    assert F["sinks_llama2_7b_gib_2048"] == "1.00 GiB"


def test_gemma2_hybrid_cache() -> None:
    # 2 x 42 x 8 x 256 x 2 = 344,064 bytes = 336 KiB a token.
    assert F["swa_gemma2_9b_kib_per_token"] == "336 KiB"
    # 344,064 x 8,192 = 2.625 GiB; local layers hold half the tokens: 0.75 x 2.625 = 1.97.
    assert F["swa_gemma2_9b_gib_8k_global"] == "2.62 GiB"
    assert F["swa_gemma2_9b_gib_8k_hybrid"] == "1.97 GiB"
    assert F["swa_gemma2_9b_saving_8k"] == "25%"
    # (32,768 + 5 x 1,024) / (6 x 32,768) = 0.193.
    assert F["swa_five_to_one_share_32k"] == "19%"

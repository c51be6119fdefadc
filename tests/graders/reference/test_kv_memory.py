"""kv_memory against the seeds' cache tables and the config-key defaults."""

from __future__ import annotations

import pytest

from graders.reference.kv_memory import (
    cache_shape_from_config,
    kv_cache_bytes,
    kv_cache_bytes_from_config,
)

KIB, GIB = 2**10, 2**30

# Config fields as the models' config.json files spell them (shapes quoted in seed 001).
LLAMA2_7B = {"num_hidden_layers": 32, "num_attention_heads": 32, "hidden_size": 4096}
MISTRAL_7B = {
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "hidden_size": 4096,
}
LLAMA3_8B = {**MISTRAL_7B, "torch_dtype": "bfloat16"}
LLAMA2_70B = {
    "num_hidden_layers": 80,
    "num_attention_heads": 64,
    "num_key_value_heads": 8,
    "hidden_size": 8192,
}
GPT2_SMALL = {"n_layer": 12, "n_head": 12, "n_embd": 768}


@pytest.mark.parametrize(
    ("config", "kib_per_token"),
    [(LLAMA2_7B, 512), (MISTRAL_7B, 128), (LLAMA3_8B, 128), (LLAMA2_70B, 320)],
    ids=["llama2-7b", "mistral-7b", "llama3-8b", "llama2-70b"],
)
def test_fp16_kib_per_token_matches_the_seed_table(config: dict[str, object], kib_per_token: int) -> None:
    assert kv_cache_bytes_from_config(config, seq_len=1) == kib_per_token * KIB


@pytest.mark.parametrize(
    ("config", "gib_4k", "gib_32k", "gib_4k_x32"),
    [
        (LLAMA2_7B, 2.00, 16.00, 64.00),
        (MISTRAL_7B, 0.50, 4.00, 16.00),
        (LLAMA3_8B, 0.50, 4.00, 16.00),
        (LLAMA2_70B, 1.25, 10.00, 40.00),
    ],
    ids=["llama2-7b", "mistral-7b", "llama3-8b", "llama2-70b"],
)
def test_gib_columns_of_the_seed_table(
    config: dict[str, object], gib_4k: float, gib_32k: float, gib_4k_x32: float
) -> None:
    assert kv_cache_bytes_from_config(config, 4096) / GIB == gib_4k
    assert kv_cache_bytes_from_config(config, 32768) / GIB == gib_32k
    assert kv_cache_bytes_from_config(config, 4096, batch=32) / GIB == gib_4k_x32


def test_gpt2_small_fp32_is_72_kib_per_token_and_4_5_gib_for_a_full_window_at_batch_64() -> None:
    assert kv_cache_bytes_from_config(GPT2_SMALL, 1, bytes_per_element=4) == 72 * KIB
    assert kv_cache_bytes_from_config(GPT2_SMALL, 1024, batch=64, bytes_per_element=4) / GIB == 4.5


def test_70b_shape_with_mha_gqa_and_mqa() -> None:
    # Seed 001: 4k tokens, batch 1, fp16: MHA 10.00 GiB, GQA(8) 1.25 GiB, MQA(1) 0.16 GiB.
    assert kv_cache_bytes(80, 64, 128, 4096) / GIB == 10.0
    assert kv_cache_bytes(80, 8, 128, 4096) / GIB == 1.25
    assert round(kv_cache_bytes(80, 1, 128, 4096) / GIB, 2) == 0.16
    # Seed 002: 327,680 bytes per token for the 70B-class shape.
    assert kv_cache_bytes(80, 8, 128, 1) == 327_680


def test_every_factor_multiplies() -> None:
    base = kv_cache_bytes(3, 5, 7, 11, batch=13, bytes_per_element=17)
    assert base == 2 * 3 * 5 * 7 * 11 * 13 * 17
    assert kv_cache_bytes(3, 5, 7, 11) == 2 * 3 * 5 * 7 * 11 * 1 * 2  # defaults: batch 1, fp16


def test_results_are_exact_ints_beyond_float_precision() -> None:
    got = kv_cache_bytes(95, 7, 129, 1_000_000_007, batch=1021, bytes_per_element=3)
    assert type(got) is int
    assert got == 2 * 95 * 7 * 129 * 1_000_000_007 * 1021 * 3
    assert float(got) != got  # the value needs more than 53 bits, so float arithmetic would be off
    assert type(kv_cache_bytes_from_config(LLAMA2_70B, 131072, batch=512)) is int


@pytest.mark.parametrize(
    "config",
    [
        {"num_hidden_layers": 32, "num_attention_heads": 32, "hidden_size": 4096},
        {
            "num_hidden_layers": 32,
            "num_attention_heads": 32,
            "hidden_size": 4096,
            "num_key_value_heads": None,
        },
        {"num_hidden_layers": 32, "num_attention_heads": 32, "hidden_size": 4096, "head_dim": None},
        {
            "num_hidden_layers": 32,
            "num_attention_heads": 32,
            "hidden_size": 4096,
            "num_key_value_heads": 32,
            "head_dim": 128,
        },
    ],
    ids=["absent", "kv-heads-null", "head-dim-null", "explicit"],
)
def test_missing_or_null_keys_fall_back_to_mha_and_hidden_over_heads(config: dict[str, object]) -> None:
    assert cache_shape_from_config(config) == (32, 32, 128)


def test_an_explicit_head_dim_wins_over_hidden_over_heads() -> None:
    config = {"num_hidden_layers": 28, "num_attention_heads": 16, "hidden_size": 3072, "head_dim": 256}
    assert cache_shape_from_config(config) == (28, 16, 256)
    assert kv_cache_bytes_from_config(config, 10) == 2 * 28 * 16 * 256 * 10 * 2


def test_gpt2_keys_and_config_dtype_is_ignored() -> None:
    assert cache_shape_from_config({**GPT2_SMALL, "torch_dtype": "float32"}) == (12, 12, 64)
    assert kv_cache_bytes_from_config({**LLAMA3_8B, "torch_dtype": "float32"}, 1) == 128 * KIB


def test_a_config_without_a_layer_count_is_rejected() -> None:
    with pytest.raises(ValueError, match="layers"):
        cache_shape_from_config({"num_attention_heads": 8, "hidden_size": 512})

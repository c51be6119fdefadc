"""The calculator's numbers are the bank's numbers: the page and the API against figures.py."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from app.content import inference_math as im
from app.content.figures import compute_figures
from app.content.hardware import A100_80GB, H100_SXM
from app.content.shapes import LLAMA2_7B, LLAMA3_8B, MODELS
from app.services.calculator import CalcError, CalcInput, calculate, model_params, preset_for_figures

FIGURES = compute_figures()


def test_the_api_matches_the_figures_for_the_cards_cases(client: TestClient) -> None:
    r = client.get(
        "/api/calculator", params={"model": "llama2_7b", "gpu": "h100_sxm", "context": 4096, "batch": 32}
    )
    assert r.status_code == 200, r.text
    got = r.json()
    assert got["bytes_per_token"] == LLAMA2_7B.kv_bytes(1) == 512 * 1024
    assert got["cache_bytes"] == LLAMA2_7B.kv_bytes(4096, 32)
    assert f"{got['cache_bytes'] / 2**30:.2f} GiB" == FIGURES["llama2_7b_gib_4k_x32"]
    # Sequences of 4k beside fp16 weights on an 80 GB card: the card's whole-sequence figure.
    assert str(got["sequences_fit"]) == FIGURES["llama2_7b_4k_seqs_80gb"]
    assert got["params"] == LLAMA2_7B.llama_params()


@pytest.mark.parametrize("key", sorted(MODELS))
def test_every_model_per_token_matches_the_cache_formula(key: str) -> None:
    model = MODELS[key]
    cache = "fp32" if key == "gpt2_small" else "bf16"
    result = calculate(CalcInput(model=key, cache=cache, context=1000, batch=3))
    assert result.bytes_per_token == model.kv_bytes(1)
    assert result.cache_bytes == model.kv_bytes(1000, 3)


def test_roofline_figures_come_from_inference_math() -> None:
    result = calculate(
        CalcInput(model="llama3_8b", gpu="a100_80gb", weights="int8", cache="fp8", context=2048, batch=7)
    )
    weights = LLAMA3_8B.llama_params() * 1
    cache = LLAMA3_8B.kv_bytes(2048, 7) // 2  # fp8 cache: half the bf16 bytes
    assert result.cache_bytes == cache
    assert result.step_s == pytest.approx(im.min_time_per_token(weights, cache, A100_80GB))
    assert result.intensity == im.decode_intensity(7, 1)
    assert result.crossover_batch == pytest.approx(im.crossover_batch(A100_80GB, 1))
    assert result.bound == "memory-bound"
    big = calculate(CalcInput(model="llama3_8b", gpu="h100_sxm", batch=400, context=16))
    assert big.bound == "compute-bound" and big.crossover_batch == pytest.approx(
        H100_SXM.ridge_flops_per_byte
    )


def test_gpt2_small_has_its_124m_parameters() -> None:
    assert round(model_params(MODELS["gpt2_small"]) / 1e6) == 124


def test_a_pasted_config_json_uses_the_graders_reader() -> None:
    config = {
        "num_hidden_layers": 7,
        "num_attention_heads": 6,
        "num_key_value_heads": 2,
        "hidden_size": 384,
        "head_dim": 80,
        "intermediate_size": 1000,
        "vocab_size": 900,
    }
    result = calculate(CalcInput(model="custom", config=json.dumps(config), context=10, cache="fp32"))
    assert (result.layers, result.kv_heads, result.head_dim) == (7, 2, 80)
    assert result.bytes_per_token == 2 * 7 * 2 * 80 * 4
    with pytest.raises(CalcError) as err:
        calculate(CalcInput(model="custom", config="{not json"))
    assert err.value.field == "config"


def test_empty_fields_mean_the_defaults(client: TestClient) -> None:
    # What the page's own form sends when a person clears the number boxes and ticks nothing.
    r = client.get("/calculator?model=&gpu=&weights=&cache=&context=&batch=&config=")
    assert r.status_code == 200 and 'id="calc-results"' in r.text
    assert client.get("/api/calculator?context=&batch=").status_code == 200


def test_a_bad_field_is_named_and_what_was_typed_is_kept(client: TestClient) -> None:
    r = client.get("/calculator", params={"context": "lots", "batch": "3"})
    assert r.status_code == 200
    assert "context must be a whole number" in r.text and 'value="lots"' in r.text and 'value="3"' in r.text
    r = client.get("/calculator", params={"model": "custom", "config": '{"n_layer": 2'})
    assert "config.json is not valid JSON" in r.text and "{&#34;n_layer&#34;: 2" in r.text
    assert client.get("/api/calculator", params={"batch": "0"}).status_code == 422


def test_cards_link_to_their_case_in_the_calculator(client: TestClient) -> None:
    assert preset_for_figures(["llama2_7b_gib_4k_x32"]) == {
        "model": "llama2_7b",
        "context": "4096",
        "batch": "32",
    }
    assert preset_for_figures(["gpt2_small_kib_per_token_fp32"])["weights"] == "fp32"  # type: ignore[index]
    assert preset_for_figures(["score_entries_1024"]) is None
    bank = client.app.state.catalog.bank  # type: ignore[attr-defined]
    card = next(c for c in bank.cards if any(n.startswith("llama2_7b_gib_4k") for n in c.figures))
    page = client.get(f"/cards/{card.id}")
    assert 'id="open-calculator"' in page.text and "/calculator?model=llama2_7b" in page.text

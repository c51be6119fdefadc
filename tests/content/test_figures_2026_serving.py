"""The 2026 serving figures recomputed by hand: the Qwen3-32B shape against its published size,
the closed-form decode sum against a step-by-step loop, the break-even link rate against its
definition, and the scenario figures the cards build on."""

from __future__ import annotations

import pytest

from app.content import figures_2026_serving as fs
from app.content.figures import compute_figures
from app.content.hardware import H100_SXM, H200_SXM
from app.content.shapes import LLAMA31_70B

FIGURES = compute_figures()


def test_qwen3_32b_is_the_published_32_8b() -> None:
    m = fs.QWEN3_32B
    layer = 2 * 5120 * 8192 + 2 * 5120 * 1024 + 3 * 5120 * 25600 + 2 * 5120
    assert m.dense_params() == 64 * layer + 2 * 151936 * 5120 + 5120
    assert FIGURES["reason_qwen3_32b_params"] == "32.8B"
    assert m.kv_bytes(1) == 2 * 64 * 8 * 128 * 2 == 256 * 1024


def test_decode_sum_in_closed_form_matches_the_loop() -> None:
    m, batch, prompt, output = fs.QWEN3_32B, 3, 100, 257
    loop = sum(
        (m.decode_read_bytes() + batch * (prompt + t) * m.kv_bytes(1)) / H200_SXM.hbm_bytes_per_s
        for t in range(output)
    )
    assert fs.decode_seconds(m, H200_SXM, batch, prompt, output) == pytest.approx(loop)


def test_break_even_rate_makes_load_and_recompute_equal() -> None:
    rate = fs.break_even_bytes_per_s(LLAMA31_70B, 4096)
    load = fs.cache_load_seconds(LLAMA31_70B, 4096, rate)
    assert load == pytest.approx(fs.recompute_seconds(LLAMA31_70B, 4096, H100_SXM))
    # Tensor parallelism splits both sides, so the per-GPU rate does not change with the degree.
    assert fs.cache_load_seconds(LLAMA31_70B, 4096, rate, shards=8) == pytest.approx(
        fs.recompute_seconds(LLAMA31_70B, 4096, H100_SXM, gpus=8)
    )


def test_the_tier_figures() -> None:
    assert FIGURES["tier_70b_cache_32k_gib"] == "10.00 GiB"  # 320 KiB x 32 Ki tokens
    assert FIGURES["tier_70b_pcie_32k_ms_tp8"] == "21.0 ms"  # 10.74 GB / 8 / 64 GB/s
    assert FIGURES["tier_route_expected_tokens"] == "7,200"  # 200 / 8 + 8,200 x 7 / 8


def test_the_design_scenario_meets_its_own_slo() -> None:
    step_ms = float(FIGURES["design_step_ms"].split()[0])
    assert step_ms <= 40  # the chosen batch keeps the TPOT target
    # Little's law: 100 requests/s x 400 steps x the step time.
    in_flight = int(FIGURES["design_in_flight"].replace(",", ""))
    assert in_flight == pytest.approx(100 * 400 * step_ms / 1e3, abs=2)  # step_ms is rounded
    replicas, batch = int(FIGURES["design_decode_replicas"]), int(FIGURES["design_replica_batch"])
    assert (replicas - 1) * batch < 100 * 400 * step_ms / 1e3 <= replicas * batch


def test_rollout_capacity() -> None:
    assert FIGURES["reason_rl_tokens"] == f"{973 * 4096 + 51 * 32768:,}"
    assert FIGURES["reason_rl_occupancy"] == f"{(973 * 4096 + 51 * 32768) / (1024 * 32768):.0%}"

"""The lab's experiments on a tiny model: every figure is produced, checked and reported with progress."""

from __future__ import annotations

import time

import pytest

from app.lab.experiments import EXPERIMENTS, Plan
from app.lab.runner import TINY_CONFIG, TINY_PLAN, LabTimeout, run_plan


@pytest.fixture(scope="module")
def report() -> tuple[dict, list[tuple[float, str]]]:  # type: ignore[type-arg]
    seen: list[tuple[float, str]] = []
    result = run_plan(TINY_CONFIG, TINY_PLAN, progress=lambda f, m: seen.append((f, m)))
    return result, seen


def test_every_experiment_runs_and_progress_climbs_to_one(report) -> None:  # type: ignore[no-untyped-def]
    result, seen = report
    assert set(result["experiments"]) == set(EXPERIMENTS)
    fractions = [f for f, _ in seen]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    assert any(m.startswith("decode with and without the cache:") for _, m in seen)
    assert not any("position_limit" in m for _, m in seen)  # the page's names, never the keys


def test_exactness_position_limit_and_cache_bytes(report) -> None:  # type: ignore[no-untyped-def]
    ex = report[0]["experiments"]
    assert ex["exactness"]["checks"]["identical"] is True
    assert len(ex["exactness"]["rows"]) == TINY_PLAN.exactness_new
    assert ex["position_limit"]["checks"]["raised_index_error"] is True
    # Counted as the cards count: token 129 needs index 128 of a 128-row table.
    assert "token 129 needs position index 128" in ex["position_limit"]["rows"][0]["error"]
    assert ex["position_limit"]["rows"][0]["index"] == TINY_CONFIG.n_positions
    assert "seed 000" not in ex["position_limit"]["seed"] + ex["cache_bytes"]["seed"]
    rows = ex["cache_bytes"]["rows"]
    assert ex["cache_bytes"]["checks"]["matches_formula"] is True
    assert [r["measured_bytes"] for r in rows] == [TINY_CONFIG.kv_bytes_per_token(4) * n for n in (8, 32, 96)]


def test_timings_have_the_seed_beside_them(report) -> None:  # type: ignore[no-untyped-def]
    ex = report[0]["experiments"]
    assert [r["prompt_tokens"] for r in ex["prefill"]["rows"]] == [8, 32, 96]
    assert all(r["ms"] > 0 for r in ex["prefill"]["rows"])
    assert ex["prefill"]["seed_points"] == []  # the seed's timings are GPT-2 small's, not a tiny model's
    assert [r["seed_ms"] for r in ex["prefill"]["rows"]] == [
        None,
        None,
        None,
    ]  # no GPT-2 small time beside it
    decode = ex["decode"]["rows"]
    assert all(r["without_cache_ms"] > 0 and r["with_cache_ms"] > 0 for r in decode)
    assert ex["decode"]["speedup"]["seed"] == 24
    assert [r["batch"] for r in ex["batching"]["rows"]] == [1, 4]


def test_a_plan_may_name_its_experiments() -> None:
    plan = Plan(**{**TINY_PLAN.__dict__, "experiments": ("cache_bytes",)})
    assert list(run_plan(TINY_CONFIG, plan)["experiments"]) == ["cache_bytes"]
    with pytest.raises(ValueError, match="unknown experiment"):
        run_plan(TINY_CONFIG, Plan(**{**TINY_PLAN.__dict__, "experiments": ("warp-drive",)}))


def test_the_time_limit_stops_a_run() -> None:
    with pytest.raises(LabTimeout, match="0.001 s limit"):
        run_plan(TINY_CONFIG, TINY_PLAN, time_limit_s=0.001, progress=lambda f, m: time.sleep(0.01))

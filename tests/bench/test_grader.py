"""`kvprep bench grader`'s figures: each challenge's latency as a ratio of decode-step's."""

from __future__ import annotations

import pytest

from app.bench.grader import BASELINE_SLUG, latency_ratios


def test_each_challenge_is_a_ratio_of_the_baselines_median() -> None:
    times = {
        BASELINE_SLUG: [0.100, 0.120, 0.110],  # median 0.110 s
        "kv-cache-bytes": [0.050, 0.060, 0.055, 0.070],  # median 0.0575 s
        "tiled-attention": [0.300, 0.100, 0.200],  # median 0.200 s
    }
    ratios = latency_ratios(times)
    assert set(ratios) == {"kv-cache-bytes", "tiled-attention"}  # the baseline is the denominator only
    assert ratios["kv-cache-bytes"]["p50_ms"] == 57.5
    assert ratios["kv-cache-bytes"]["p50_over_decode_step"] == pytest.approx(0.523, abs=1e-3)
    assert ratios["kv-cache-bytes"]["p95_ms"] == 70.0  # nearest rank round(0.95 * 3) = 3
    assert ratios["tiled-attention"]["p50_over_decode_step"] == pytest.approx(1.818, abs=1e-3)
    assert ratios["tiled-attention"]["p95_ms"] == 300.0

"""`kvprep bench pages`' arithmetic: each page's ratio to the bare page, its targets, the speed-ups."""

from __future__ import annotations

import pytest

from app.bench import pages
from app.bench.wrk import WrkResult


def _result(rps: float, p99: float, *, bad: int = 0, errors: int = 0) -> WrkResult:
    return WrkResult(
        requests_per_s=rps,
        p50_ms=p99 / 2,
        p99_ms=p99,
        requests=int(rps * 5),
        bad_responses=bad,
        socket_errors=errors,
    )


BARE = _result(10_000.0, 4.0)


def test_the_ratio_is_the_pages_requests_over_the_bare_pages() -> None:
    row = pages.page_row("/cards", "first", (0.25, 50.0), _result(2_600.0, 20.0), BARE)
    assert row["ratio"] == 0.26
    assert row["met"] is True
    assert row["baseline_requests_per_s"] == 10_000.0 and row["baseline_p99_ms"] == 4.0
    assert row["requests_per_s"] == 2_600.0 and row["p99_ms"] == 20.0  # the page's own figures


@pytest.mark.parametrize(
    "result",
    [
        _result(2_400.0, 20.0),  # 0.24 of the bare page: under the 0.25 target
        _result(3_000.0, 50.0),  # p99 on the bound is not under it
        _result(3_000.0, 20.0, bad=1),  # one non-2xx/3xx answer
        _result(3_000.0, 20.0, errors=1),  # one socket error
    ],
)
def test_a_target_missed_by_any_measure_is_not_met(result: WrkResult) -> None:
    assert pages.page_row("/cards", "first", (0.25, 50.0), result, BARE)["met"] is False


def test_targets_per_visitor() -> None:
    assert pages.targets("/cards", 0.25, "first") == (0.25, pages.P99_TARGET_MS)
    assert pages.targets("/cards", 0.25, "returning") == (0.25, pages.P99_TARGET_MS)
    assert pages.targets("/cards", 0.25, "signed-in") == (pages.SIGNED_IN_TARGET, pages.SIGNED_IN_P99_MS)
    for visitor in pages.VISITORS:  # the dashboard is personal for every visitor with a row
        assert pages.targets("/progress", 0.02, visitor) == pages.SIGNED_IN_PROGRESS


def test_speedups_are_against_the_same_page_with_the_first_process_count() -> None:
    figures: list[dict[str, object]] = [
        {"workers": 1, "path": "/a", "requests_per_s": 1000.0},
        {"workers": 1, "path": "/b", "requests_per_s": 400.0},
        {"workers": 2, "path": "/a", "requests_per_s": 1500.0},
        {"workers": 2, "path": "/b", "requests_per_s": 790.0},
    ]
    pages.add_speedups(figures, 1)
    assert [row["speedup"] for row in figures] == [1.0, 1.0, 1.5, 1.98]

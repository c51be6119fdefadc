"""The benchmarks' percentile: the nearest rank, never past either end."""

from __future__ import annotations

from app.bench.common import median, percentile


def test_percentile_picks_the_nearest_rank_of_the_sorted_values() -> None:
    values = [5.0, 1.0, 4.0, 2.0, 3.0]
    assert percentile(values, 0.0) == 1.0
    assert percentile(values, 0.5) == 3.0
    assert percentile(values, 0.95) == 5.0  # rank round(0.95 * 4) = 4
    assert percentile(values, 0.6) == 3.0  # round(2.4) = 2
    assert percentile(values, 1.0) == 5.0
    assert values == [5.0, 1.0, 4.0, 2.0, 3.0]  # the caller's list is left as it was


def test_percentile_of_one_value_is_that_value() -> None:
    assert percentile([7.5], 0.99) == 7.5


def test_median_of_an_even_count_is_the_mean_of_the_middle_two() -> None:
    assert median([4.0, 1.0, 3.0, 2.0]) == 2.5

"""graders/reference/sliding_window.py: the ring buffer equals the list that keeps everything."""

from __future__ import annotations

import pytest
import torch

from graders.reference.sliding_window import ListWindowCache, SlidingWindowCache, kept_positions
from tests.graders.reference.test_decode import assert_close


def test_kept_positions() -> None:
    assert kept_positions(3, 4, 2).tolist() == [0, 1, 2]
    assert kept_positions(10, 4, 2).tolist() == [0, 1, 6, 7, 8, 9]
    assert kept_positions(10, 3, 0).tolist() == [7, 8, 9]


@pytest.mark.parametrize(("window", "n_sink"), [(4, 0), (4, 2), (1, 3), (5, 1)])
@pytest.mark.parametrize("chunks", [[1] * 12, [7, 1, 1, 9, 2], [13]])
def test_ring_buffer_equals_the_explicit_list(window: int, n_sink: int, chunks: list[int]) -> None:
    gen = torch.Generator().manual_seed(3)
    ring, listed = (
        SlidingWindowCache(window, n_sink, 2, 3, 4, dtype=torch.float64),
        ListWindowCache(window, n_sink),
    )
    ptr = ring.k.data_ptr()
    for n in chunks:
        k, v = torch.randn(2, 2, 3, n, 4, generator=gen, dtype=torch.float64).unbind(0)
        got, want = ring.update(k, v), listed.update(k, v)
        assert_close(got[0], want[0], "keys")
        assert_close(got[1], want[1], "values")
        assert torch.equal(got[2], want[2])
    assert ring.k.data_ptr() == ptr and ring.k.shape == (2, 3, n_sink + window, 4)

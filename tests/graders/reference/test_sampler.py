"""The reference sampler: both paths agree, and the order and tie rules hold."""

from __future__ import annotations

import pytest
import torch

from graders.reference.sampling import filter_probs, filter_row, sample


@pytest.mark.parametrize(
    "temperature, top_k, top_p",
    [(1.0, 0, 1.0), (0.7, 5, 1.0), (1.3, 0, 0.8), (0.5, 8, 0.6), (0.0, 3, 0.5), (2.0, 40, 0.95)],
)
def test_the_vectorised_and_explicit_paths_agree(temperature: float, top_k: int, top_p: float) -> None:
    gen = torch.Generator().manual_seed(0)
    logits = torch.randn(4, 30, generator=gen, dtype=torch.float64) * 2
    logits[1, 3] = logits[1, 7] = logits[1].max() + 1  # a tie at the top
    got = filter_probs(logits, temperature, top_k, top_p)
    want = torch.tensor(
        [filter_row(row, temperature, top_k, top_p) for row in logits.tolist()], dtype=torch.float64
    )
    assert torch.allclose(got, want, atol=1e-12)
    assert torch.allclose(got.sum(-1), torch.ones(4, dtype=torch.float64))


def test_ties_go_to_the_lower_index() -> None:
    logits = torch.tensor([[0.0, 2.0, 1.0, 2.0, 2.0]])
    assert filter_probs(logits, 0.0).tolist() == [[0.0, 1.0, 0.0, 0.0, 0.0]]
    kept = filter_probs(logits, top_k=2)[0] > 0
    assert kept.tolist() == [False, True, False, True, False]


def test_top_p_keeps_the_token_that_crosses_the_threshold() -> None:
    probs = torch.tensor([[0.5, 0.3, 0.15, 0.05]])
    kept = filter_probs(probs.log(), top_p=0.7)[0] > 0
    assert kept.tolist() == [True, True, False, False]


def test_sampling_is_the_inverse_cdf_in_vocabulary_order() -> None:
    probs = torch.tensor([[0.1, 0.6, 0.3]]).repeat(4, 1)
    u = torch.tensor([0.05, 0.2, 0.69, 0.75])
    assert sample(probs.log(), u).tolist() == [0, 1, 1, 2]
    assert sample(probs.log(), torch.zeros(4), top_k=1).tolist() == [1, 1, 1, 1]


@pytest.mark.parametrize("kwargs", [{"temperature": -0.1}, {"top_k": -1}, {"top_p": 0.0}, {"top_p": 1.5}])
def test_bad_arguments_raise_value_error(kwargs: dict) -> None:
    with pytest.raises(ValueError):
        filter_probs(torch.zeros(1, 3), **kwargs)

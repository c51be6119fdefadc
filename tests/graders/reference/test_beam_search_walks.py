"""The beam-search reference: its explicit and vectorised walks against each other and against the
variants' plain search with no slip and the worked solution, on random settings (hypothesis), and
the prompt's worked example, step by step."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from graders.checks.beam_search_model import HistoryModel
from graders.checks.beam_search_variants import search
from graders.reference.beam_search import beam_search, final_score, walk_explicit, walk_vectorised
from tests.graders.checks.helpers import challenge_dir


def solution() -> object:
    namespace: dict[str, object] = {}
    exec((challenge_dir("beam-search") / "solution.py").read_text(), namespace)
    return namespace["beam_search"]


SETTINGS = st.fixed_dictionaries(
    {
        "seed": st.integers(0, 2**31 - 1),
        "vocab": st.integers(4, 12),
        "prompt": st.lists(st.integers(0, 3), min_size=1, max_size=4),
        "beam_width": st.integers(1, 3),
        "max_new_tokens": st.integers(1, 6),
        "eos": st.one_of(st.none(), st.integers(0, 3)),
        "length_penalty": st.sampled_from([1.0, 0.0, 0.5, 2.0, -1.0]),
    }
)


@settings(max_examples=200, deadline=None)
@given(SETTINGS)
def test_four_writings_of_the_rule_agree(s: dict) -> None:  # type: ignore[type-arg]
    args = (s["prompt"], s["beam_width"], s["max_new_tokens"], s["eos"], s["length_penalty"])
    answers = []
    for run in (
        lambda m: beam_search(m, *args),
        lambda m: beam_search(m, *args, explicit=True),
        lambda m: search(m, *args),
        lambda m: solution()(m, *args),  # type: ignore[operator]
    ):
        model = HistoryModel(s["seed"], s["vocab"], s["eos"])
        answers.append((run(model), model.prefills, model.steps))
    assert all(a == answers[0] for a in answers[1:]), answers
    result, prefills, steps = answers[0]
    assert prefills == 1 and len(steps) <= s["max_new_tokens"] - 1
    assert 1 <= len(result) <= s["beam_width"]
    assert [r[1] for r in result] == sorted((r[1] for r in result), reverse=True)


@settings(max_examples=300, deadline=None)
@given(
    st.integers(1, 4),
    st.integers(2, 9),
    st.integers(1, 4),
    st.one_of(st.none(), st.integers(0, 8)),
    st.data(),
)
def test_the_two_walks_agree_with_ties(
    n: int, V: int, width: int, eos: int | None, data: st.DataObject
) -> None:
    """Log-probs on a coarse grid make ties common: both walks break them to the lower b, then t."""
    grid = data.draw(st.lists(st.integers(-6, 0), min_size=n * V, max_size=n * V))
    scores = data.draw(st.lists(st.integers(-6, 0).map(lambda k: k / 4), min_size=n, max_size=n))
    log_probs = torch.tensor(grid, dtype=torch.float32).reshape(n, V) / 4
    eos = None if eos is None or eos >= V else eos
    if V - (eos is not None) < width:
        return  # not enough tokens for width live beams from one beam: the contract's V is larger
    assert walk_explicit(scores, log_probs, width, eos) == walk_vectorised(scores, log_probs, width, eos)


def test_the_prompt_example_walks_as_shown() -> None:
    log_probs = torch.tensor([[-1.0, -0.25, -0.5, -2.0], [-0.125, -0.5, -1.0, -0.25]])
    for walk in (walk_explicit, walk_vectorised):
        live, done = walk([-0.5, -0.75], log_probs, 2, 0)
        assert live == [(0, 1, -0.75), (0, 2, -1.0)]  # (1, 3) ties (0, 2) at -1.0: the lower b first
        assert done == [(1, -0.875)]  # eos at rank 1 < beam_width
        live, done = walk([-0.5, -0.75], log_probs, 1, 0)
        assert done == [] and live == [(0, 1, -0.75)]  # the same eos at rank 1 is not below 1
    assert final_score(-1.5, 3, 1.0) == -0.5


def test_the_search_refuses_widths_and_lengths_below_one() -> None:
    with pytest.raises(ValueError, match="beam_width=0"):
        beam_search(HistoryModel(0, 5), [1], 0, 3)
    with pytest.raises(ValueError, match="max_new_tokens=0"):
        beam_search(HistoryModel(0, 5), [1], 2, 0)


def test_live_beams_join_after_the_finished_ones_on_a_tie() -> None:
    """A model where eos and token 1 tie at every step: the finished hypothesis ranks first."""

    class Flat(HistoryModel):
        def row(self, history: tuple[int, ...]) -> list[float]:
            return [-1.0, -1.0, -3.0, -3.0]

    result = beam_search(Flat(0, 4, 0), [2], 2, 1, eos_id=0)
    assert result == [([2, 0], -1.0), ([2, 1], -1.0)]  # eos finished; live beam 1 joins after it

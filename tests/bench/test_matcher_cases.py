"""The shipped key-point matcher on the labelled answers (app/bench/matcher_cases.yaml, issue 22
item 9): precision and recall at the shipped threshold, over every answer, both at least 0.85.
A quality threshold on a fixed set, not a timing: the same as `kvprep bench matcher` prints."""

from __future__ import annotations

from collections import Counter

import pytest

from app.bench.matcher import eval_set, pairs, prf
from app.services import key_point_matcher as kpm


@pytest.fixture(scope="module")
def answers() -> list:
    return [a for a in eval_set() if a.kind == "labelled"]


def test_the_set_holds_200_answers_of_every_kind(answers: list) -> None:
    assert len(answers) >= 200
    kinds = Counter(a.label for a in answers)
    assert {"paraphrase", "partial", "verbatim", "wrong", "numeric", "numeric-wrong"} <= set(kinds)
    assert kinds["numeric"] >= 40 and kinds["numeric-wrong"] >= 25 and kinds["wrong"] >= 25
    assert all(set(a.truth) <= set(range(len(a.points))) for a in answers)
    assert len({a.card for a in answers}) >= 25


def test_precision_and_recall_at_the_shipped_threshold(answers: list) -> None:
    matcher = kpm.KeyPointMatcher()
    embedder = matcher.embedder()
    assert embedder is not None and embedder.name == "wordllama", "the packaged model did not load"
    cache = kpm.PointCache(size=10_000)
    scores = [kpm.mixed_scores(embedder, a.text, a.points, cache, a.tolerance) for a in answers]
    precision, recall, _ = prf(pairs(answers, scores, lambda a: True), kpm.SEMANTIC_THRESHOLD["wordllama"])
    assert precision >= 0.85 and recall >= 0.85, (precision, recall)
    # What the user sees is the same: suggest() ticks exactly the pairs counted above.
    first = answers[0]
    got = matcher.suggest(first.text, first.points, first.tolerance).points
    assert got == [i for i, s in enumerate(scores[0]) if s >= kpm.SEMANTIC_THRESHOLD["wordllama"]]

"""`kvprep bench matcher`'s scoring: precision, recall and F1 at a threshold, the threshold chosen,
and the split of the cards in two halves."""

from __future__ import annotations

import zlib

import pytest

from app.bench.matcher import EvalAnswer, best_threshold, pairs, prf

# (score, the point is truly covered): two true points and two false ones.
ROWS = [(0.9, True), (0.7, False), (0.6, True), (0.2, False)]


def test_precision_recall_and_f1_at_a_threshold() -> None:
    # At 0.65: suggested 0.9 (right) and 0.7 (wrong); 0.6 missed.
    p, r, f1 = prf(ROWS, 0.65)
    assert (p, r) == (0.5, 0.5) and f1 == pytest.approx(0.5)
    # At 0.5: three suggested, both true points among them.
    p, r, f1 = prf(ROWS, 0.5)
    assert p == pytest.approx(2 / 3) and r == 1.0 and f1 == pytest.approx(0.8)


def test_nothing_suggested_scores_zero_not_a_division_by_zero() -> None:
    assert prf(ROWS, 0.95) == (0.0, 0.0, 0.0)
    assert prf([], 0.5) == (0.0, 0.0, 0.0)


def test_the_best_threshold_has_the_best_f1_and_is_the_lowest_on_a_tie() -> None:
    # F1 at 0.9: 2/3; at 0.7: 0.5; at 0.6: 0.8 (the best); at 0.2: 2/3.
    assert best_threshold(ROWS) == 0.6
    # F1 2/3 at 0.9 (p 1, r 1/2) and at 0.3 (p 1/2, r 1), less between: the lower one wins.
    assert best_threshold([(0.9, True), (0.5, False), (0.4, False), (0.3, True)]) == 0.3


def test_pairs_label_each_key_point_of_the_kept_answers() -> None:
    a = EvalAnswer("card-a", "hand", "text", ["p0", "p1", "p2"], truth=[1])
    b = EvalAnswer("card-b", "off-card", "text", ["q0", "q1"], truth=[])
    rows = pairs([a, b], [[0.1, 0.8, 0.3], [0.9, 0.2]], keep=lambda answer: answer.kind == "hand")
    assert rows == [(0.1, False), (0.8, True), (0.3, False)]


def test_the_cards_split_in_two_by_a_hash_of_their_id() -> None:
    for card in ("what-the-cache-stores", "gqa-memory", "paged-attention-blocks"):
        answer = EvalAnswer(card, "hand", "", [], [])
        assert answer.test is (zlib.crc32(card.encode()) % 2 == 1)

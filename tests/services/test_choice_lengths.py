"""Multiple choice cannot be answered by length: over every live card asked as a choice, the
longest option is right no more often than chance, and the shortest neither.

Chance for one question with k right options of n is k/n (a random order of its options puts a
right one last k times in n). Over the questions asked, the count of "the longest is right" is
then a sum of Bernoulli(k/n) draws: mean sum(k/n), variance sum(k/n * (1 - k/n)). The test
allows the count up to 2.33 standard deviations above that mean (a one-sided 1% level). When
options were full key points against one-line wrong answers (means 245 and 61 characters), the
longest option was right in 4,054 of 4,060 questions against a chance of 1,664 (sd 30.3).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from sqlmodel import Session

from app.models import Card
from app.services import choice_options, questions
from app.services.card_content import content

SEEDS = 20
Z_ONE_SIDED_1PCT = 2.33


@dataclass
class Tally:
    asked: int = 0
    longest_right: int = 0
    shortest_right: int = 0
    chance: float = 0.0
    variance: float = 0.0

    def bound(self) -> float:
        return self.chance + Z_ONE_SIDED_1PCT * math.sqrt(self.variance)


def every_choice_question(db: Session) -> list[tuple[Card, dict]]:  # type: ignore[type-arg]
    by_topic = questions.cards_by_topic(session=db)
    return [
        (card, questions.build_choice(card, cards, random.Random(f"{card.id}:{seed}")))
        for cards in by_topic.values()
        for card in cards
        for seed in range(SEEDS)
    ]


def test_the_longest_and_the_shortest_option_are_right_no_more_often_than_chance(db: Session) -> None:
    tally = Tally()
    for _card, question in every_choice_question(db):
        options = question["options"]
        k, n = sum(o["correct"] for o in options), len(options)
        tally.asked += 1
        tally.longest_right += max(options, key=lambda o: len(o["text"]))["correct"]
        tally.shortest_right += min(options, key=lambda o: len(o["text"]))["correct"]
        tally.chance += k / n
        tally.variance += k / n * (1 - k / n)
    assert tally.asked >= 200 * SEEDS  # every live card, each asked SEEDS times
    said = (
        f"{tally.asked} questions: the longest option right in {tally.longest_right}, the shortest in "
        f"{tally.shortest_right}, chance {tally.chance:.0f} (sd {math.sqrt(tally.variance):.1f})"
    )
    assert tally.longest_right <= tally.bound(), said
    assert tally.shortest_right <= tally.bound(), said


def test_right_and_wrong_options_are_of_similar_length(db: Session) -> None:
    asked = every_choice_question(db)
    right = [len(o["text"]) for _c, q in asked for o in q["options"] if o["correct"]]
    wrong = [len(o["text"]) for _c, q in asked for o in q["options"] if not o["correct"]]
    mean_right, mean_wrong = sum(right) / len(right), sum(wrong) / len(wrong)
    assert abs(mean_right - mean_wrong) <= 0.1 * mean_wrong, (mean_right, mean_wrong)
    assert max(right + wrong) <= choice_options.SHORT_MAX


def test_options_are_of_one_form(db: Session) -> None:
    """No bold (only key points have it), no closing full stop, no quotes around a wrong answer;
    a right option is a short form of the key point it carries in full."""
    for card, question in every_choice_question(db):
        for o in question["options"]:
            text = o["text"]
            assert "**" not in text and not text.endswith(".") and not text.startswith('"'), text
            if o["correct"]:
                assert o["key_point"] in content(card).key_points
                assert text in choice_options.short_forms(o["key_point"]), (card.id, text)


def test_a_short_form_is_the_first_sentence_cut_where_it_stays_true() -> None:
    long_tail = ", ".join(["and then the cache holds every head of every layer"] * 3)
    assert (
        choice_options.short_forms(
            "**Caching K/V after `repeat_kv`.** If keys are expanded first, it grows."
        )[0]
        == "Caching K/V after `repeat_kv`"
    )
    forms = choice_options.short_forms(f"The cache grows with the context, {long_tail}. Second sentence.")
    assert forms[0] == "The cache grows with the context, and then the cache holds every head of every layer"
    assert "The cache grows with the context" in forms
    assert all(len(f) <= choice_options.SHORT_MAX for f in forms)
    # A label alone says nothing: the next sentence comes with it.
    assert choice_options.short_forms("**Invariance.** An orthogonal rotation leaves `x W` unchanged.") == [
        "Invariance. An orthogonal rotation leaves `x W` unchanged"
    ]
    # Never cut before "but" (it would turn the statement), nor leave "both X" without "and Y".
    but = (
        "Paged attention wastes at most one block per sequence "
        + "x" * 70
        + " but only when blocks are small"
    )
    assert all("but" not in f for f in choice_options.short_forms(but))
    both = "One paged pool holds both the KV-cache blocks and the adapter weights, in pages of one size"
    assert "One paged pool holds both the KV-cache blocks" not in choice_options.short_forms(both)
    # A cut that leaves a code span open is no option.
    assert choice_options.short_forms("`" + "a" * 130 + "`, then more words here") == []


def test_a_wrong_answer_as_an_option_loses_its_quotes_and_full_stop() -> None:
    assert (
        choice_options.wrong_form('"The cache is small next to the model."')
        == "The cache is small next to the model"
    )
    assert choice_options.wrong_form("\u201cPadding is free.\u201d") == "Padding is free"

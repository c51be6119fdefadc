"""Asking a card, for the quiz and the mock interview alike: which kinds a card can be asked as,
the question frozen for it, and the check of a multiple-choice or numeric answer.

- recall: the card's own question; the answer is typed (or spoken) and the user ticks the key
  points it covered. Its question JSON is {}.
- choice: some of the card's key points, each in its short form, against distractors taken from
  the common wrong answers (the card's own first, then its topic's), drawn so that length gives
  nothing away (app/services/choice_options.py): {"prompt", "options": [{"text", "correct",
  "why", "key_point"? (a right option's full key point), "card_id"? (a wrong one's card)}]}.
  A wrong pick is Again, missing a right one Hard, exactly the right ones Good.
- numeric: a problem generated from a real model config or data sheet, of a kind that belongs
  to this card (app/services/numeric.py declares which cards each kind fits): the
  NumericQuestion's JSON, checked with its unit and tolerance.

The quiz stores the question JSON as its item's payload; the mock stores it under the kind's
key beside the follow-up ({"follow_up", "choice" | "numeric"}). Both shapes are what
existing databases hold, so neither changes.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from fsrs import Rating
from sqlmodel import Session, col, select

from app.enums import QuestionKind
from app.models import Card
from app.services import choice_options, numeric
from app.services.card_content import as_json, content
from app.services.errors import InvalidInput

KINDS = ("recall", "choice", "numeric")
CHOICE_PROMPT = "Which of these belong in a strong answer? Tick every one that does."
# Draws of a card's numeric problem before giving up on one not yet asked in this session.
NUMERIC_REDRAWS = 12


class NoSuchOption(InvalidInput):
    """A multiple-choice answer picked an option the question does not have."""


# --- which cards, which kinds ------------------------------------------------------------------------


def live_cards(*, session: Session, topics: Sequence[str] = (), difficulty: str | None = None) -> list[Card]:
    """The cards not retired, of these topics (all when none is named) and this difficulty."""
    query = select(Card).where(col(Card.retired).is_(False))
    if topics:
        query = query.where(col(Card.topic).in_(list(topics)))
    if difficulty:
        query = query.where(Card.difficulty == difficulty)
    return list(session.exec(query).all())


def cards_by_topic(*, session: Session) -> dict[str, list[Card]]:
    """Every live card by topic: where a multiple-choice question finds its distractors."""
    by_topic: dict[str, list[Card]] = {}
    for card in live_cards(session=session):
        by_topic.setdefault(card.topic, []).append(card)
    return by_topic


def fits(card: Card, kind: str) -> bool:
    """Whether the card can be asked as this kind: recall and choice always, numeric when a kind fits it."""
    return kind != QuestionKind.NUMERIC or numeric.fits(card)


def cycle_kinds(cards: Sequence[Card], kinds: Iterable[str]) -> list[str]:
    """The quiz's kinds: cycle through the chosen ones; a card that does not fit one takes the next.

    Then every chosen kind that some card could take but none got replaces a repeated kind,
    so a short mixed quiz still has one of each.
    """
    chosen = set(kinds)
    cycle = [k for k in KINDS if k in chosen] or ["recall"]
    out: list[str] = []
    for i, card in enumerate(cards):
        options = [cycle[(i + j) % len(cycle)] for j in range(len(cycle))]
        out.append(next((k for k in options if fits(card, k)), "recall"))
    for kind in cycle:
        if kind in out:
            continue
        for i in reversed(range(len(cards))):
            if fits(cards[i], kind) and out.count(out[i]) > 1:
                out[i] = kind
                break
    return out


def interview_kinds(cards: Sequence[Card]) -> list[str]:
    """The mock's kinds: spoken questions, with one numeric problem on the first card after the
    opener that one fits, and (from three questions) one multiple choice."""
    kinds = ["recall"] * len(cards)
    numeric_at = next((i for i in range(1, len(cards)) if fits(cards[i], "numeric")), None)
    if numeric_at is not None:
        kinds[numeric_at] = "numeric"
    if len(cards) >= 3:
        choice_at = next(i for i in range(1, len(cards)) if kinds[i] == QuestionKind.RECALL)
        kinds[choice_at] = "choice"
    return kinds


# --- building a question -----------------------------------------------------------------------------


def build_choice(card: Card, topic_cards: Sequence[Card], rng: random.Random) -> dict[str, Any]:
    """Some of the card's key points in short form against common wrong answers (the card's own
    first, then its topic's), drawn so that an option's length says nothing (choice_options)."""
    key_points = content(card).key_points
    forms = [
        [choice_options.Candidate(f, i) for f in choice_options.short_forms(kp)]
        for i, kp in enumerate(key_points)
    ]
    points = [f for f in forms if f]
    if not points:  # a card none of whose key points has a short form: the first, cut as it is
        points = [[choice_options.Candidate(key_points[0][: choice_options.SHORT_MAX], 0)]]
    wrongs = [
        {**as_json(w), "card_id": c.id}
        for c in [card, *(c for c in topic_cards if c.id != card.id)]
        for w in content(c).wrong_answers
    ]
    pool = [choice_options.Candidate(choice_options.wrong_form(w["answer"]), i) for i, w in enumerate(wrongs)]
    n_own = len(content(card).wrong_answers)
    right, wrong = choice_options.draw(points, pool[:n_own], pool[n_own:], rng)
    options: list[dict[str, Any]] = [
        {"text": c.text, "correct": True, "why": None, "key_point": key_points[c.source]} for c in right
    ]
    options += [
        {
            "text": c.text,
            "correct": False,
            "why": wrongs[c.source]["why"],
            "card_id": wrongs[c.source]["card_id"],
        }
        for c in wrong
    ]
    rng.shuffle(options)
    return {"prompt": CHOICE_PROMPT, "options": options}


def build_numeric(card: Card, rng: random.Random, asked: set[str] | None = None) -> dict[str, Any] | None:
    """A numeric problem that belongs to the card and whose prompt is not in `asked` (then added to it);
    None when no kind fits the card or no new problem came up in NUMERIC_REDRAWS more draws."""
    question = numeric.generate_for(card, rng)
    if question is None:
        return None
    seen = asked if asked is not None else set()
    for _ in range(NUMERIC_REDRAWS):
        if question.prompt not in seen:
            break
        question = numeric.generate_for(card, rng)
        assert question is not None
    if question.prompt in seen:
        return None
    seen.add(question.prompt)
    return question.to_payload()


def build(*, card: Card, kind: str, rng: random.Random, topic_cards: Sequence[Card]) -> dict[str, Any]:
    """The question JSON for a card asked as `kind` (see the module docstring)."""
    if kind == QuestionKind.CHOICE:
        return build_choice(card, topic_cards, rng)
    if kind == QuestionKind.NUMERIC:
        problem = build_numeric(card, rng)
        if problem is None:
            raise ValueError(f"no numeric problem fits card {card.id!r}")
        return problem
    return {}


# --- checking an answer ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ChoiceCheck:
    picked: list[int]  # sorted, without repeats
    rating: Rating

    @property
    def correct(self) -> bool:
        return self.rating == Rating.Good

    @property
    def partial(self) -> bool:
        return self.rating == Rating.Hard


def grade_choice(question: dict[str, Any], picked: set[int]) -> Rating:
    options = question["options"]
    if any(not options[i]["correct"] for i in picked):
        return Rating.Again
    if not picked:
        return Rating.Again
    if any(o["correct"] and i not in picked for i, o in enumerate(options)):
        return Rating.Hard
    return Rating.Good


def check_choice(question: dict[str, Any], picked: Iterable[int]) -> ChoiceCheck:
    """Grade the picked options; NoSuchOption (422) for an index the question does not have."""
    chosen = set(picked)
    if any(not 0 <= i < len(question["options"]) for i in chosen):
        raise NoSuchOption("No such option", field="picked")
    return ChoiceCheck(sorted(chosen), grade_choice(question, chosen))


def picked_texts(question: dict[str, Any], picked: Iterable[int]) -> str:
    """The picked options' texts, as the answer a report quotes."""
    return "; ".join(question["options"][i]["text"] for i in sorted(picked))


def check_numeric(question: dict[str, Any], value: str, unit: str | None) -> numeric.NumericCheck:
    """Read the number and unit typed and compare them with the problem's answer, within its tolerance;
    `given` is None when the text does not read as a number in the problem's units (ask again then)."""
    return numeric.check_answer(question, value, unit)

"""Setting up a mock interview: how many questions, which cards, which coding problem, frozen at the start.

`plan_questions` turns the length into a number of card questions (about four minutes for an
answer and its follow-up; the coding problem gets up to fifteen minutes, at most half the
interview). Cards are drawn from the chosen topics (all of them by default), the chosen
difficulty first and the nearest others when too few match, with weights toward what the
user needs:

- a topic weighs 1 + 2 x (1 - mastery) + 1 if it has cards due (mastery from FSRS, as on
  the progress page), and each card already drawn from a topic divides its weight by
  (1 + drawn)^2 so the interview spreads over topics;
- inside a topic a due card weighs 3, an unseen card 2, any other 1; a card asked in one
  of the user's last three mock interviews weighs a quarter of that.

They are asked in an interviewer's order: easy before hard, topic by topic in study order.
One card (not the opener) that a numeric problem fits is asked as that problem
(app/services/numeric.py) and, from three questions up, another as multiple choice
(app/services/questions.py); the rest are asked as spoken questions. Every card question is
followed by one of the card's follow-ups. The coding problem comes last and is graded by the
grading queue like any submission, inside the same clock. A retry from a report's debrief
(`one_question`) asks the one card it names, spoken, and nothing else.
"""

from __future__ import annotations

import math
import random
import secrets
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlmodel import Session, col, select

from app.config import Settings
from app.content.catalog import Catalog
from app.content.challenges import Challenge
from app.enums import Difficulty, MockItemKind
from app.models import Card, CardProgress, MockInterview, MockItem, Submission, Topic, User
from app.services import questions, scheduling
from app.services.card_content import as_json, content
from app.services.errors import Conflict, InvalidInput, NotFound, NotReady
from app.services.mock.deadline import running_mock
from graders.verdict import Verdict

LENGTHS = (15, 30, 45)
DIFFICULTIES = ("easy", "medium", "hard")
DIFFICULTY_RANK = {"easy": 0, "medium": 1, "hard": 2}
RECENT_MOCKS = 3


@dataclass(frozen=True)
class MockSpec:
    minutes: int
    topics: tuple[str, ...] = ()
    difficulty: str | None = None
    with_challenge: bool = True
    seed: int | None = field(default=None, compare=False)  # tests fix it; otherwise random
    card: str | None = None  # a one-question retry of this card (`one_question`): no draw


def one_question(card_id: str, settings: Settings) -> MockSpec:
    """A retry of one card from a report's debrief: asked spoken, with a follow-up, on the clock of
    one question, and no coding problem."""
    return MockSpec(math.ceil(settings.mock_minutes_per_question), with_challenge=False, card=card_id)


def plan_questions(*, minutes: int, with_challenge: bool, settings: Settings) -> int:
    """How many card questions fit: at least one, at most mock_max_questions."""
    coding = min(settings.mock_challenge_minutes, minutes / 2) if with_challenge else 0.0
    n = round((minutes - coding) / settings.mock_minutes_per_question)
    return max(1, min(settings.mock_max_questions, n))


def topic_weights(*, session: Session, user: User, settings: Settings, now: datetime) -> dict[str, float]:
    """topic -> weight: weak topics and topics with cards due weigh more."""
    return {
        m.slug: 1 + 2 * (1 - m.mastery) + (1 if m.due else 0)
        for m in scheduling.mastery_by_topic(session=session, user=user, settings=settings, now=now)
    }


def recent_card_ids(*, session: Session, user_id: int, limit: int = RECENT_MOCKS) -> set[str]:
    """Cards asked in the user's last few mock interviews."""
    recent = select(MockInterview.id).where(MockInterview.user_id == user_id)
    recent = recent.order_by(col(MockInterview.started_at).desc()).limit(limit)
    ids = session.exec(
        select(MockItem.card_id).where(col(MockItem.interview_id).in_(recent.scalar_subquery()))
    ).all()
    return {i for i in ids if i}


def card_weights(*, session: Session, user_id: int, now: datetime) -> dict[str, float]:
    """card id -> weight inside its topic; cards not listed weigh 2 (unseen)."""
    weights = {
        p.card_id: 3.0 if p.due <= now else 1.0
        for p in session.exec(select(CardProgress).where(CardProgress.user_id == user_id)).all()
    }
    for card_id in recent_card_ids(session=session, user_id=user_id):
        weights[card_id] = weights.get(card_id, 2.0) / 4
    return weights


def draw_cards(
    pool: Sequence[Card],
    n: int,
    *,
    topic_weight: Mapping[str, float],
    card_weight: Mapping[str, float],
    rng: random.Random,
) -> list[Card]:
    """n cards without replacement: a topic by weight (shrinking as it is drawn from), then a card in it."""
    by_topic: dict[str, list[Card]] = {}
    for card in sorted(pool, key=lambda c: c.id):
        by_topic.setdefault(card.topic, []).append(card)
    drawn: list[Card] = []
    counts: Counter[str] = Counter()
    while len(drawn) < n and by_topic:
        topics = sorted(by_topic)
        weights = [topic_weight.get(t, 1.0) / (1 + counts[t]) ** 2 for t in topics]
        topic = rng.choices(topics, weights)[0]
        cards = by_topic[topic]
        card = rng.choices(cards, [card_weight.get(c.id, 2.0) for c in cards])[0]
        cards.remove(card)
        if not cards:
            del by_topic[topic]
        drawn.append(card)
        counts[topic] += 1
    return drawn


def interviewer_order(cards: Sequence[Card], positions: Mapping[str, int]) -> list[Card]:
    """Easy before hard; within a difficulty, topic by topic in study order."""
    return sorted(
        cards, key=lambda c: (DIFFICULTY_RANK.get(c.difficulty, 3), positions.get(c.topic, 999), c.title)
    )


def select_cards(
    *,
    session: Session,
    user: User,
    spec: MockSpec,
    n: int,
    settings: Settings,
    now: datetime,
    rng: random.Random,
) -> list[Card]:
    assert user.id is not None
    pool = questions.live_cards(session=session, topics=spec.topics)
    weights = {
        "topic_weight": topic_weights(session=session, user=user, settings=settings, now=now),
        "card_weight": card_weights(session=session, user_id=user.id, now=now),
    }
    if spec.difficulty is None:
        chosen = draw_cards(pool, n, rng=rng, **weights)
    else:
        target = DIFFICULTY_RANK[spec.difficulty]
        chosen = []
        for distance in range(len(DIFFICULTIES)):
            tier = [c for c in pool if abs(DIFFICULTY_RANK.get(c.difficulty, 3) - target) == distance]
            chosen += draw_cards(tier, n - len(chosen), rng=rng, **weights)
    return interviewer_order(chosen, scheduling.topic_positions(session=session))


# Spoken questions, with one numeric problem on a card it fits and (from three questions) one
# multiple choice: app/services/questions.py.
assign_kinds = questions.interview_kinds


def choose_challenge(
    *,
    catalog: Catalog,
    passed: set[str],
    topics: Sequence[str],
    difficulty: str | None,
    topic_weight: Mapping[str, float],
    rng: random.Random,
) -> Challenge | None:
    """A challenge on the chosen topics, of the chosen difficulty if one fits, rarely one already passed."""
    if not catalog.challenges:
        return None

    def weight(c: Challenge) -> float:
        overlap = len(set(c.meta.topics) & set(topics)) if topics else 1
        need = sum(topic_weight.get(t, 1.0) for t in c.meta.topics) / len(c.meta.topics)
        fit = 1.0 if difficulty in (None, c.meta.difficulty.value) else 0.2
        return (overlap or 0.02) * need * fit * (0.2 if c.slug in passed else 1.0)

    return rng.choices(catalog.challenges, [weight(c) for c in catalog.challenges])[0]


def passed_challenges(*, session: Session, user_id: int) -> set[str]:
    rows = session.exec(
        select(Submission.challenge).where(
            Submission.user_id == user_id, Submission.verdict == Verdict.PASSED
        )
    ).all()
    return set(rows)


def build_payload(
    *, card: Card, kind: str, rng: random.Random, topic_cards: Sequence[Card]
) -> dict[str, Any]:
    """What the item asks, frozen: the follow-up, and the numeric problem or the options."""
    payload: dict[str, Any] = {"follow_up": as_json(rng.choice(content(card).follow_ups))}
    if kind in ("numeric", "choice"):
        payload[kind] = questions.build(card=card, kind=kind, rng=rng, topic_cards=topic_cards)
    return payload


def start_mock(
    *, session: Session, user: User, spec: MockSpec, catalog: Catalog, settings: Settings, now: datetime
) -> MockInterview:
    """Draw the questions, freeze them, start the clock.

    InvalidInput for a bad set-up, Conflict while another interview runs.
    """
    assert user.id is not None
    if not 1 <= spec.minutes <= settings.mock_max_minutes:
        raise InvalidInput(f"Choose a length from 1 to {settings.mock_max_minutes} minutes", "minutes")
    if spec.difficulty is not None and spec.difficulty not in DIFFICULTIES:
        raise InvalidInput("Choose a difficulty among easy, medium and hard (or mixed)", "difficulty")
    known = set(session.exec(select(Topic.slug)).all())
    unknown = sorted(set(spec.topics) - known)
    if unknown:
        raise InvalidInput(f"Unknown topic {unknown[0]!r}", "topics")
    if running_mock(session=session, user_id=user.id, now=now) is not None:
        raise Conflict("You already have a mock interview running: finish it or end it first")

    rng = random.Random(spec.seed if spec.seed is not None else secrets.randbits(64))
    if spec.card is not None:
        retried = session.get(Card, spec.card)
        if retried is None or retried.retired:
            raise NotFound("No such card to try again")
        cards = [retried]
    else:
        n = plan_questions(minutes=spec.minutes, with_challenge=spec.with_challenge, settings=settings)
        cards = select_cards(session=session, user=user, spec=spec, n=n, settings=settings, now=now, rng=rng)
    if not cards:
        raise NotReady("No card matches those topics", "topics")
    challenge = None
    if spec.with_challenge and spec.card is None:
        challenge = choose_challenge(
            catalog=catalog,
            passed=passed_challenges(session=session, user_id=user.id),
            topics=spec.topics,
            difficulty=spec.difficulty,
            topic_weight=topic_weights(session=session, user=user, settings=settings, now=now),
            rng=rng,
        )
    by_topic = questions.cards_by_topic(session=session)

    mock = MockInterview(
        user_id=user.id,
        minutes=spec.minutes,
        topics=[cards[0].topic] if spec.card is not None else list(spec.topics),
        difficulty=None if spec.difficulty is None else Difficulty(spec.difficulty),
        with_challenge=challenge is not None,
        started_at=now,
        deadline=now + timedelta(minutes=spec.minutes),
    )
    session.add(mock)
    session.flush()
    assert mock.id is not None
    for position, (card, kind) in enumerate(zip(cards, assign_kinds(cards), strict=True)):
        payload = build_payload(card=card, kind=kind, rng=rng, topic_cards=by_topic.get(card.topic, []))
        session.add(
            MockItem(
                interview_id=mock.id,
                user_id=user.id,
                position=position,
                kind=MockItemKind(kind),
                card_id=card.id,
                payload=payload,
                asked_at=now if position == 0 else None,
            )
        )
    if challenge is not None:
        session.add(
            MockItem(
                interview_id=mock.id,
                user_id=user.id,
                position=len(cards),
                kind=MockItemKind.CHALLENGE,
                challenge=challenge.slug,
                payload={},
            )
        )
    session.commit()
    session.refresh(mock)
    return mock

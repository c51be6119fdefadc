"""app/services/mock/plan.py: how long an interview is, which cards and challenge it draws, the
set-ups it refuses."""

from __future__ import annotations

import random
from collections import Counter
from datetime import timedelta

import pytest
from fsrs import Rating
from sqlmodel import Session, col, select

from app.config import Settings
from app.models import Card
from app.services import mock as mocks
from app.services import numeric, scheduling
from app.services.errors import ServiceError
from tests.services.factories import catalog, make_user
from tests.services.mock.helpers import NOW, start


@pytest.mark.parametrize(
    ("minutes", "with_challenge", "questions"),
    [
        (15, False, 4),
        (30, False, 8),
        (45, False, 11),
        (15, True, 2),
        (30, True, 4),
        (45, True, 8),
        (1, True, 1),
    ],
)
def test_the_length_sets_how_many_questions(
    settings: Settings, minutes: int, with_challenge: bool, questions: int
) -> None:
    assert (
        mocks.plan_questions(minutes=minutes, with_challenge=with_challenge, settings=settings) == questions
    )


def test_set_up_draws_from_the_topics_in_an_interviewers_order(db: Session, settings: Settings) -> None:
    user = make_user(db, guest_token="g")
    mock = start(
        db, settings, user, minutes=45, topics=("kv-memory", "mha-mqa-gqa", "rope"), with_challenge=True
    )
    assert mock.deadline - mock.started_at == timedelta(minutes=45) and mock.started_at == NOW
    items = mocks.mock_items(session=db, mock=mock)
    cards = [db.get(Card, i.card_id) for i in items if i.card_id]
    assert len(cards) == 8 and len({c.id for c in cards}) == 8
    assert {c.topic for c in cards} == {"kv-memory", "mha-mqa-gqa", "rope"}  # spread over the topics
    ranks = [mocks.DIFFICULTY_RANK[c.difficulty] for c in cards]
    assert ranks == sorted(ranks)  # easy before hard
    kinds = [i.kind for i in items]
    assert kinds[0] == "recall" and kinds.count("numeric") == 1 and kinds.count("choice") == 1
    assert kinds[-1] == "challenge" and items[-1].challenge in {c.slug for c in catalog().challenges}
    for item, card in zip(items, cards, strict=False):
        assert item.payload["follow_up"] in card.data["follow_ups"]
        assert item.kind != "numeric" or numeric.has_numeric(card.topic)
    assert items[0].asked_at == NOW and all(i.asked_at is None for i in items[1:])


def test_difficulty_comes_first_then_the_nearest(db: Session, settings: Settings) -> None:
    user = make_user(db, guest_token="g")
    topics = ("kv-memory", "mha-mqa-gqa")
    # a retired card (superseded_by) is never drawn, so it is not in the pool either
    pool = db.exec(select(Card).where(col(Card.topic).in_(topics), col(Card.retired).is_(False))).all()
    hard = sum(1 for c in pool if c.difficulty == "hard")
    mock = start(db, settings, user, minutes=30, topics=topics, difficulty="hard")
    drawn = [db.get(Card, i.card_id) for i in mocks.mock_items(session=db, mock=mock)]
    assert len(drawn) == min(len(pool), 8)
    assert sum(1 for c in drawn if c.difficulty == "hard") == hard  # every hard card, then the nearest
    assert not any(c.difficulty == "easy" for c in drawn) or all(
        c.difficulty != "medium" for c in pool if c not in drawn
    )


def test_weak_and_due_topics_come_up_more(db: Session, settings: Settings) -> None:
    user = make_user(db, guest_token="g")
    for card in db.exec(select(Card).where(Card.topic == "rope")).all():  # rope: studied well, nothing due
        for days in (30, 20, 10):
            scheduling.review_card(
                session=db, user=user, card_id=card.id, rating=Rating.Easy, source="recall",
                settings=settings, now=NOW - timedelta(days=days),
            )  # fmt: skip
    db.commit()
    weights = mocks.topic_weights(session=db, user=user, settings=settings, now=NOW)
    assert weights["rope"] < weights["kv-memory"]  # untouched, so weak
    pool = db.exec(select(Card).where(col(Card.topic).in_(["rope", "kv-memory"]))).all()
    first = Counter(
        mocks.draw_cards(pool, 1, topic_weight=weights, card_weight={}, rng=random.Random(seed))[0].topic
        for seed in range(300)
    )
    assert first["kv-memory"] > 2 * first["rope"]
    # Inside a topic, a due card beats the others.
    due = {"real-model-shapes-80gb": 3.0, "kv-formula-gpt2-small": 1.0, "seventy-b-8000-tokens": 1.0}
    kv = [c for c in pool if c.topic == "kv-memory"]
    picks = Counter(
        mocks.draw_cards(kv, 1, topic_weight={}, card_weight=due, rng=random.Random(s))[0].id
        for s in range(300)
    )
    assert picks.most_common(1)[0][0] == "real-model-shapes-80gb"


def test_bad_set_ups_and_a_second_running_interview_are_refused(db: Session, settings: Settings) -> None:
    user = make_user(db, guest_token="g")
    for spec, message in [
        ({"minutes": 0}, "length"),
        ({"minutes": settings.mock_max_minutes + 1}, "length"),
        ({"topics": ("no-such-topic",)}, "Unknown topic"),
        ({"difficulty": "trivial"}, "difficulty"),
    ]:
        with pytest.raises(ServiceError, match=message) as info:
            start(db, settings, user, **spec)
        assert info.value.status == 422
    start(db, settings, user)
    with pytest.raises(ServiceError, match="already have a mock interview running") as info:
        start(db, settings, user)
    assert info.value.status == 409
    # Once the first one's deadline has passed it closes itself, and a new one may start.
    later = NOW + timedelta(minutes=16)
    assert mocks.running_mock(session=db, user_id=user.id, now=later) is None
    mocks.start_mock(
        session=db, user=user, spec=mocks.MockSpec(15, with_challenge=False), catalog=catalog(),
        settings=settings, now=later,
    )  # fmt: skip


@pytest.mark.parametrize(
    "slug",
    [
        "paged-kv-cache",
        "speculative-decoding",
        "sampling",
        "int8-kv-cache",
        "continuous-batching",
        "radix-prefix-cache",
        "beam-search",
    ],
)
def test_the_coding_question_can_be_a_serving_challenge(db: Session, settings: Settings, slug: str) -> None:
    """Asked for a serving challenge's topic and difficulty, the mock interview draws it."""
    challenge = catalog().challenge(slug)
    assert challenge is not None
    topics, difficulty = tuple(challenge.meta.topics[:1]), challenge.meta.difficulty.value
    draws = Counter(
        mocks.choose_challenge(
            catalog=catalog(), passed=set(), topics=topics, difficulty=difficulty, topic_weight={},
            rng=random.Random(seed),
        ).slug  # type: ignore[union-attr]
        for seed in range(100)
    )  # fmt: skip
    assert draws[slug] >= 10
    for seed in range(30):  # and a whole mock interview set up that way has it as its coding question
        user = make_user(db, guest_token=f"g-{slug}-{seed}")
        mock = start(
            db,
            settings,
            user,
            minutes=15,
            topics=topics,
            difficulty=difficulty,
            with_challenge=True,
            seed=seed,
        )
        if any(i.challenge == slug for i in mocks.mock_items(session=db, mock=mock)):
            return
    raise AssertionError(f"no mock interview drew {slug}")


def test_a_roofline_mock_asks_a_hardware_numeric_problem(db: Session, settings: Settings) -> None:
    user = make_user(db, guest_token="roofline")
    mock = start(db, settings, user, minutes=20, topics=("roofline",))
    items = mocks.mock_items(session=db, mock=mock)
    numeric_items = [i for i in items if i.kind == "numeric"]
    assert len(numeric_items) == 1
    problem = numeric_items[0].payload["numeric"]
    assert problem["generator"] in {"min_decode_latency", "ridge_point", "crossover_batch"}
    assert problem["solution"] and problem["units"] and problem["tolerance"] > 0
    now = NOW
    for item in items:
        value = item.payload["numeric"]["answer_text"] if item.kind == "numeric" else None
        picked = (
            [i for i, o in enumerate(item.payload["choice"]["options"]) if o["correct"]]
            if item.kind == "choice"
            else []
        )
        mocks.answer(session=db, mock=mock, position=item.position, step="question", settings=settings,
                     now=now, value=value, picked=picked)  # fmt: skip
        mocks.answer(
            session=db, mock=mock, position=item.position, step="follow_up", settings=settings, now=now
        )
    checked = next(i for i in mocks.mock_items(session=db, mock=mock) if i.kind == "numeric")
    assert checked.correct is True

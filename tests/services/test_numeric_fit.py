"""Every numeric problem belongs to a card it fits (issue 15 item 2): each kind declares the cards it
may be asked on, and neither the quiz nor the mock interview attaches it anywhere else."""

from __future__ import annotations

import random
from datetime import UTC, datetime

from sqlmodel import Session, col, select

from app.config import Settings
from app.models import Card, Topic
from app.services import mock as mocks
from app.services import numeric, questions
from app.services import quiz as quizzes
from tests.services.factories import catalog, make_user

NOW = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)

# Cards of a topic that has numeric problems but whose subject no problem is about.
OFF_SUBJECT = {
    "uptraining-mha-to-gqa",  # converting a checkpoint: no cache arithmetic in it
    "beam-search-and-left-padding",
    "activation-quantization-w8a8",
    "fp8-e4m3-vs-e5m2",
    "weight-absorption",
    "expert-parallelism",
    "pipeline-parallel-bubbles",
    "tail-latency-p99",
    "ttft-tpot-itl",
    "prefill-decode-mix",
}


def live(db: Session) -> list[Card]:
    return list(db.exec(select(Card).where(col(Card.retired).is_(False)).order_by(Card.id)).all())


def test_every_kind_declares_topics_and_tags_the_bank_has(db: Session) -> None:
    assert set(numeric.FITS) == set(numeric.GENERATORS)
    topics = set(db.exec(select(Topic.slug)).all())
    cards = live(db)
    for name, fit in numeric.FITS.items():
        assert fit.topics and set(fit.topics) <= topics, name
        tags_there = {t for c in cards if c.topic in fit.topics for t in c.tags}
        assert fit.tags <= tags_there, (name, sorted(fit.tags - tags_there))  # a misspelt tag fits nothing
        assert any(fit.fits(c.topic, c.tags) for c in cards), f"{name} fits no card of the bank"


def test_every_card_a_problem_is_attached_to_is_on_subject(db: Session) -> None:
    """For the whole bank: what a card can be asked as matches its topic and tags, and the problem
    actually built for it is one of those kinds."""
    attached: dict[str, set[str]] = {}
    for card in live(db):
        kinds = numeric.kinds_for(card)
        for name in kinds:
            fit = numeric.FITS[name]
            assert card.topic in fit.topics, (name, card.id, card.topic)
            assert not fit.tags or fit.tags & set(card.tags), (name, card.id, card.tags)
        assert questions.fits(card, "numeric") == bool(kinds) and numeric.fits(card) == bool(kinds)
        for seed in range(8):
            problem = questions.build_numeric(card, random.Random(seed))
            assert (problem is None) == (not kinds), card.id
            if problem is not None:
                assert problem["generator"] in kinds, (card.id, problem["generator"])
                attached.setdefault(problem["generator"], set()).add(card.id)
    assert set(attached) == set(numeric.GENERATORS)  # every kind is asked on some card
    off = {card for cards in attached.values() for card in cards} & OFF_SUBJECT
    assert not off, off


def test_the_uptraining_card_is_never_a_memory_problem(db: Session, settings: Settings) -> None:
    """Golden case: this mock (15 minutes, GQA and RoPE, seed 1) used to ask a memory-saving number
    (gqa_saving) on the card about uptraining a checkpoint to GQA."""
    uptraining = db.get(Card, "uptraining-mha-to-gqa")
    assert uptraining is not None and numeric.kinds_for(uptraining) == ()
    gqa_cache = db.get(Card, "gqa-cache-for-a-70b-model")
    assert gqa_cache is not None and set(numeric.kinds_for(gqa_cache)) == {"kv_bytes_per_token", "gqa_saving"}

    user = make_user(db, guest_token="golden")
    spec = mocks.MockSpec(15, ("mha-mqa-gqa", "rope"), None, False, seed=1)
    mock = mocks.start_mock(session=db, user=user, spec=spec, catalog=catalog(), settings=settings, now=NOW)
    asked = [(i.card_id, i.kind) for i in mocks.mock_items(session=db, mock=mock)]
    assert asked == [
        ("gqa-cache-for-a-70b-model", "recall"),
        ("how-rope-works", "choice"),
        ("uptraining-mha-to-gqa", "recall"),  # was ("uptraining-mha-to-gqa", "numeric")
        ("rope-with-streaming-positions", "recall"),  # rope-offset-bug-in-decoding is retired
    ]
    # With a card that fits after the opener, the interview still has its numeric problem.
    by_id = {c.id: c for c in live(db)}
    order = [by_id["mha-vs-mqa-vs-gqa"], uptraining, gqa_cache]
    assert questions.interview_kinds(order) == ["recall", "choice", "numeric"]


def test_quiz_and_mock_attach_problems_only_to_cards_they_fit(db: Session, settings: Settings) -> None:
    user = make_user(db, email="fit@example.com")
    for topic in sorted(numeric.TOPIC_GENERATORS):
        spec = quizzes.QuizSpec(topics=(topic,), size=10, kinds=("numeric",), seed=5)
        quiz = quizzes.start_quiz(session=db, user=user, spec=spec, settings=settings, now=NOW)
        items = quizzes.quiz_items(session=db, quiz=quiz)
        fitting = {c.id for c in live(db) if c.topic == topic and numeric.fits(c)}
        assert {i.card_id for i in items} == fitting, topic  # every fitting card, and no other
        prompts = [i.payload["prompt"] for i in items]
        assert len(prompts) == len(set(prompts)), topic  # no problem twice in one quiz
        for item in items:
            card = db.get(Card, item.card_id)
            assert card is not None and item.payload["generator"] in numeric.kinds_for(card)

    for seed in range(12):
        guest = make_user(db, guest_token=f"fit-{seed}")
        spec = mocks.MockSpec(30, (), None, False, seed=seed)
        mock = mocks.start_mock(
            session=db, user=guest, spec=spec, catalog=catalog(), settings=settings, now=NOW
        )
        for item in mocks.mock_items(session=db, mock=mock):
            if item.kind == "numeric":
                card = db.get(Card, item.card_id)
                assert card is not None
                assert item.payload["numeric"]["generator"] in numeric.kinds_for(card), (seed, card.id)

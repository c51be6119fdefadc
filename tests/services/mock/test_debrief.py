"""app/services/mock/debrief.py: each missed key point beside the closest the answer came; and the
one-question retry a debrief offers (app/services/mock/plan.py `one_question`)."""

from __future__ import annotations

import pytest
from sqlmodel import Session

from app.config import Settings
from app.models import Card
from app.services import mock as mocks
from app.services import questions
from app.services.errors import NotFound
from app.services.mock.debrief import missed_points
from tests.services.factories import catalog, make_user
from tests.services.mock.helpers import NOW

POINTS = (
    "Keys and values of every past token, per layer and KV head.",
    "Queries are not stored: each is used once.",
    "Llama-2-7B keeps 512 KiB per token in fp16.",
)


def test_each_missed_point_sits_beside_the_closest_clause() -> None:
    answer = "The cache holds keys for each layer. Queries are recomputed every step, which is slow."
    follow_up = "Per token it is about a megabyte in fp16 for Llama-2-7B."
    missed = missed_points(POINTS, {0}, answer, follow_up)
    assert [m.point for m in missed] == [1, 2]  # the covered point is no miss; order of importance kept
    assert missed[0].strong == POINTS[1]
    assert missed[0].yours == "Queries are recomputed every step, which is slow."
    assert missed[1].yours == follow_up  # the follow-up answer counts as the answer's own words


def test_a_point_nothing_came_near_reads_as_untouched() -> None:
    missed = missed_points(POINTS, set(), "Attention is quadratic in the sequence length.")
    assert [(m.point, m.yours) for m in missed] == [(0, None), (1, None), (2, None)]
    assert missed_points(POINTS, {0, 1, 2}, "anything") == []


def test_try_again_starts_a_one_question_mock_on_that_card(db: Session, settings: Settings) -> None:
    user = make_user(db, guest_token="again")
    card = sorted(questions.live_cards(session=db), key=lambda c: c.id)[-1]
    spec = mocks.one_question(card.id, settings)
    mock = mocks.start_mock(session=db, user=user, spec=spec, catalog=catalog(), settings=settings, now=NOW)
    items = mocks.mock_items(session=db, mock=mock)
    assert [(i.card_id, i.kind) for i in items] == [(card.id, "recall")]
    assert items[0].payload["follow_up"] and items[0].asked_at == NOW
    assert mock.topics == [card.topic] and not mock.with_challenge
    assert mock.minutes == 4  # one question's time (mock_minutes_per_question)
    mocks.finish(session=db, mock=mock, now=NOW)
    with pytest.raises(NotFound):
        mocks.start_mock(
            session=db, user=user, spec=mocks.one_question("no-such-card", settings),
            catalog=catalog(), settings=settings, now=NOW,
        )  # fmt: skip
    retired = db.get(Card, card.id)
    assert retired is not None
    retired.retired = True
    db.add(retired)
    db.commit()
    with pytest.raises(NotFound):
        mocks.start_mock(session=db, user=user, spec=spec, catalog=catalog(), settings=settings, now=NOW)

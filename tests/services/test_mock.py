"""Mock interviews: planning and drawing questions, the server's clock, the flow, scoring, the report."""

from __future__ import annotations

import random
from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest
from fsrs import Rating
from sqlmodel import Session, col, select

from app.config import Settings
from app.models import Card, CardProgress, MockInterview, MockItem, Review, Submission, User
from app.services import accounts, numeric, scheduling
from app.services import mock as mocks
from app.services.errors import ServiceError
from tests.services.factories import catalog, make_user

NOW = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def start(db: Session, settings: Settings, user: User, **spec: object) -> MockInterview:
    values: dict[str, object] = {"minutes": 15, "with_challenge": False, "seed": 7} | spec
    return mocks.start_mock(
        session=db,
        user=user,
        spec=mocks.MockSpec(**values),
        catalog=catalog(),
        settings=settings,
        now=NOW,  # type: ignore[arg-type]
    )


def answer_all(db: Session, settings: Settings, mock: MockInterview, *, every: float, text: str = "") -> None:
    """Answer every card question and its follow-up, `every` seconds apart."""
    now = NOW
    for item in mocks.mock_items(session=db, mock=mock):
        if item.kind == "challenge":
            return
        for step in ("question", "follow_up"):
            now += timedelta(seconds=every)
            mocks.answer(
                session=db, mock=mock, position=item.position, step=step, settings=settings, now=now,
                text=text or f"answer {item.position} {step}", value="1", picked=[0],
            )  # fmt: skip


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
    pool = db.exec(select(Card).where(col(Card.topic).in_(topics))).all()
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


def test_the_deadline_is_the_servers(db: Session, settings: Settings) -> None:
    user = make_user(db, guest_token="g")
    mock = start(db, settings, user)
    one_second_left = mock.deadline - timedelta(seconds=1)
    mocks.answer(session=db, mock=mock, position=0, step="question", settings=settings, now=one_second_left)
    with pytest.raises(ServiceError, match="Time is up") as info:
        mocks.answer(
            session=db, mock=mock, position=0, step="follow_up", settings=settings,
            now=mock.deadline + timedelta(seconds=1), text="too late",
        )  # fmt: skip
    assert info.value.status == 409
    db.refresh(mock)
    assert mock.ended_at == mock.deadline and mock.ended_by == "deadline"
    assert mocks.mock_items(session=db, mock=mock)[0].follow_up_answer is None
    assert mocks.remaining_seconds(mock, NOW) == 0


def test_flow_question_then_follow_up_then_the_next(db: Session, settings: Settings) -> None:
    user = make_user(db, guest_token="g")
    mock = start(db, settings, user, topics=("rope",))
    items = mocks.mock_items(session=db, mock=mock)
    assert mocks.phase(mocks.current_item(items)) == "question"
    with pytest.raises(ServiceError, match="moved on"):  # the follow-up before the answer
        mocks.answer(session=db, mock=mock, position=0, step="follow_up", settings=settings, now=NOW)
    mocks.answer(
        session=db, mock=mock, position=0, step="question", settings=settings, now=NOW, text="rotate"
    )
    with pytest.raises(ServiceError, match="moved on"):  # a second tab answering again
        mocks.answer(session=db, mock=mock, position=0, step="question", settings=settings, now=NOW, text="x")
    current = mocks.current_item(mocks.mock_items(session=db, mock=mock))
    assert current.position == 0 and mocks.phase(current) == "follow_up"
    later = NOW + timedelta(seconds=30)
    mocks.answer(session=db, mock=mock, position=0, step="follow_up", settings=settings, now=later, text="y")
    items = mocks.mock_items(session=db, mock=mock)
    assert items[0].done_at == later and items[1].asked_at == later
    assert mocks.current_item(items).position == 1
    with pytest.raises(ServiceError, match="limited|under") as info:
        mocks.answer(
            session=db, mock=mock, position=1, step="question", settings=settings, now=later,
            text="x" * (settings.mock_answer_max_chars + 1),
        )  # fmt: skip
    assert info.value.status == 422


def test_the_interview_closes_when_everything_is_answered(db: Session, settings: Settings) -> None:
    user = make_user(db, guest_token="g")
    mock = start(db, settings, user, topics=("rope",))
    answered = 2 * len(mocks.mock_items(session=db, mock=mock))  # a question and a follow-up each
    answer_all(db, settings, mock, every=20)
    db.refresh(mock)
    assert mock.ended_by == "completed" and mock.ended_at == NOW + timedelta(seconds=20 * answered)
    with pytest.raises(ServiceError, match="over"):
        mocks.finish(session=db, mock=mock, now=NOW + timedelta(minutes=2))


def test_numeric_and_choice_are_checked_when_answered(db: Session, settings: Settings) -> None:
    user = make_user(db, guest_token="g")
    mock = start(db, settings, user, minutes=20, topics=("kv-memory", "rope", "mha-mqa-gqa"))
    items = mocks.mock_items(session=db, mock=mock)
    by_kind = {i.kind: i for i in items}
    assert {"numeric", "choice", "recall"} <= set(by_kind)
    now = NOW
    for item in items:
        if item.kind == "numeric":
            problem = item.payload["numeric"]
            value, unit = str(problem["answer"] / numeric.BYTE_UNITS.get(problem["unit"], 1)), problem["unit"]
            if problem["dimension"] != "bytes":
                value, unit = str(problem["answer"]), None
            mocks.answer(session=db, mock=mock, position=item.position, step="question", settings=settings,
                         now=now, value=value, unit=unit)  # fmt: skip
        elif item.kind == "choice":
            right = [i for i, o in enumerate(item.payload["choice"]["options"]) if o["correct"]]
            mocks.answer(session=db, mock=mock, position=item.position, step="question", settings=settings,
                         now=now, picked=right)  # fmt: skip
        else:
            mocks.answer(
                session=db, mock=mock, position=item.position, step="question", settings=settings, now=now
            )
        mocks.answer(
            session=db, mock=mock, position=item.position, step="follow_up", settings=settings, now=now
        )
    checked = {i.kind: i for i in mocks.mock_items(session=db, mock=mock)}
    assert checked["numeric"].correct is True and checked["choice"].correct is True
    assert checked["recall"].correct is None
    fresh = start(db, settings, make_user(db, guest_token="h"), minutes=20, topics=("kv-memory", "rope"))
    choice = next(i for i in mocks.mock_items(session=db, mock=fresh) if i.kind == "choice")
    for i in mocks.mock_items(session=db, mock=fresh)[: choice.position]:
        for step in ("question", "follow_up"):
            mocks.answer(session=db, mock=fresh, position=i.position, step=step, settings=settings, now=NOW)
    with pytest.raises(ServiceError, match="No such option") as refused:
        mocks.answer(session=db, mock=fresh, position=choice.position, step="question", settings=settings,
                     now=NOW, picked=[99])  # fmt: skip
    assert (refused.value.status, refused.value.field) == (422, "picked")


def test_matching_common_wrong_answers() -> None:
    common = {"attention", "sequenc", "length", "cach", "token"}
    wrong = "It grows with the square of the sequence length, because attention is quadratic."
    assert mocks.matches_wrong_answer("The cache grows quadratically with the sequence length", wrong, common)
    # Only the words every answer uses: not a match.
    flash = '"FlashAttention makes attention linear in sequence length."'
    assert not mocks.matches_wrong_answer("attention is quadratic in the sequence length", flash, common)
    assert mocks.matches_wrong_answer("flashattention makes it linear in the length", flash, common)
    assert not mocks.matches_wrong_answer("", wrong, common)
    assert mocks.content_words("The caches, cached and caching") == {"cach"}


def test_scoring_feeds_spaced_repetition_once(db: Session, settings: Settings) -> None:
    user = make_user(db, guest_token="g")
    mock = start(db, settings, user, topics=("rope", "flashattention"))
    with pytest.raises(ServiceError, match="still running"):
        mocks.score_mock(session=db, user=user, mock=mock, marks={}, settings=settings, now=NOW)
    items = mocks.mock_items(session=db, mock=mock)
    # Answer the first question and its follow-up, half of the second, then the clock runs out.
    for position, step in [(0, "question"), (0, "follow_up"), (1, "question")]:
        mocks.answer(session=db, mock=mock, position=position, step=step, settings=settings,
                     now=NOW + timedelta(minutes=1 + position), text="something")  # fmt: skip
    end = mock.deadline + timedelta(seconds=5)
    n0 = len(db.get(Card, items[0].card_id).data["key_points"])
    marks = {0: mocks.Mark(tuple(range(n0)), True), 1: mocks.Mark((0,), True), 2: mocks.Mark((0, 1), True)}
    mocks.score_mock(session=db, user=user, mock=mock, marks=marks, settings=settings, now=end)
    items = mocks.mock_items(session=db, mock=mock)
    assert items[0].covered == list(range(n0)) and items[0].follow_up_covered is True
    assert items[1].follow_up_covered is False  # no follow-up answer: nothing to cover
    assert items[2].covered is None and items[2].rating is None and len(items) == 4  # never reached
    assert items[0].rating == int(Rating.Good) and items[1].rating == int(Rating.Again)
    reviews = db.exec(select(Review).where(Review.user_id == user.id, Review.source == "mock")).all()
    assert sorted(r.card_id for r in reviews) == sorted([items[0].card_id, items[1].card_id])
    again = scheduling.get_progress(session=db, user_id=user.id, card_id=items[1].card_id)
    assert again is not None and again.due == items[1].due_after
    with pytest.raises(ServiceError, match="already scored"):
        mocks.score_mock(session=db, user=user, mock=mock, marks={}, settings=settings, now=end)

    report = mocks.build_report(session=db, mock=mock, catalog=catalog(), now=end)
    assert report.scored and report.ended_by == "deadline" and report.seconds_used == 15 * 60
    first, second, third, _ = report.items
    assert first.score == pytest.approx(1.0) and first.seconds == 60 and first.answer_seconds == 60
    assert second.answered and second.follow_up_answer is None
    assert second.seconds == (mock.deadline - (NOW + timedelta(minutes=1))).total_seconds()
    assert not third.reached and third.seconds is None and third.score == 0
    assert report.score == pytest.approx(sum(r.score for r in report.items) / 4)
    assert {t.slug for t in report.by_topic} <= {"rope", "flashattention"}
    assert [r.target for r in report.review] == [second.card_id]  # reached and weak: not the unreached one


def fake_submission(
    db: Session, user: User, item: MockItem, sid: str, verdict: str | None, passed: int
) -> None:
    tests = [{"name": f"t{i}", "passed": i < passed, "message": ""} for i in range(4)]
    result = {"verdict": verdict, "tests": tests, "diagnosis": ["look at the mask"]} if verdict else None
    db.add(
        Submission(
            id=sid, user_id=user.id, challenge=item.challenge, code=f"# {sid}",
            status="done" if verdict else "queued", verdict=verdict, result=result,
        )
    )  # fmt: skip
    item.response = {"submissions": [*(item.response or {}).get("submissions", []), sid]}
    db.add(item)
    db.commit()


def test_the_coding_verdict_counts(db: Session, settings: Settings) -> None:
    user = make_user(db, guest_token="g")
    mock = start(db, settings, user, topics=("rope",), with_challenge=True)
    item = mocks.mock_items(session=db, mock=mock)[-1]
    assert item.kind == "challenge"
    fake_submission(db, user, item, "s1", "failed", passed=2)
    outcome = mocks.challenge_outcome(session=db, item=item, catalog=catalog())
    assert outcome.verdict == "failed" and outcome.score == pytest.approx(0.25) and outcome.code == "# s1"
    fake_submission(db, user, item, "s2", "passed", passed=4)
    fake_submission(db, user, item, "s3", None, passed=0)  # still grading
    outcome = mocks.challenge_outcome(session=db, item=item, catalog=catalog())
    assert outcome.passed and outcome.score == 1 and outcome.attempts == 3 and not outcome.final
    assert outcome.code == "# s2"  # the passing one counts


def test_code_goes_in_only_on_the_clock_and_after_the_questions(db: Session, settings: Settings) -> None:
    class Queue:
        def submit(self, *, session: Session, user_id: int, challenge: str, code: str) -> Submission:
            submission = Submission(id=f"q{len(code)}", user_id=user_id, challenge=challenge, code=code)
            session.add(submission)
            session.commit()
            return submission

    user = make_user(db, guest_token="g")
    mock = start(db, settings, user, topics=("rope",), with_challenge=True)
    with pytest.raises(ServiceError, match="after the questions"):
        mocks.submit_code(session=db, mock=mock, grading=Queue(), code="x", now=NOW)  # type: ignore[arg-type]
    answer_all(db, settings, mock, every=10)
    mocks.submit_code(session=db, mock=mock, grading=Queue(), code="xy", now=NOW + timedelta(minutes=3))  # type: ignore[arg-type]
    item = mocks.mock_items(session=db, mock=mock)[-1]
    assert item.response == {"submissions": ["q2"]} and item.answered_at == NOW + timedelta(minutes=3)
    with pytest.raises(ServiceError, match="Time is up"):
        mocks.submit_code(session=db, mock=mock, grading=Queue(), code="xyz", now=mock.deadline)  # type: ignore[arg-type]


def test_sharing_needs_a_score_and_can_be_revoked(db: Session, settings: Settings) -> None:
    user = make_user(db, guest_token="g")
    mock = start(db, settings, user, topics=("rope",))
    with pytest.raises(ServiceError, match="Score"):
        mocks.share(session=db, mock=mock)
    mocks.finish(session=db, mock=mock, now=NOW + timedelta(minutes=1))
    mocks.score_mock(session=db, user=user, mock=mock, marks={}, settings=settings, now=NOW)
    token = mocks.share(session=db, mock=mock)
    assert len(token) >= 32 and mocks.share(session=db, mock=mock) == token
    assert mocks.get_shared(session=db, token=token) == mock
    mocks.revoke(session=db, mock=mock)
    assert mocks.get_shared(session=db, token=token) is None
    assert mocks.was_revoked(session=db, token=token) and not mocks.was_revoked(session=db, token="x" * 32)
    assert mocks.get_shared(session=db, token=mocks.REVOKED + token) is None
    assert mocks.share(session=db, mock=mock) != token  # a new link; the old one stays dead


def test_a_guests_interviews_move_to_the_account(db: Session, settings: Settings) -> None:
    account = make_user(db, email="a@example.com")
    guest = make_user(db, guest_token="guest-token")
    mock = start(db, settings, guest, topics=("rope",))
    mock_id, guest_id = mock.id, guest.id
    accounts.merge_users(session=db, source=guest, target=account)
    moved = db.get(MockInterview, mock_id)
    assert moved is not None and moved.user_id == account.id
    assert all(i.user_id == account.id for i in mocks.mock_items(session=db, mock=moved))
    assert mocks.get_mock(session=db, user_id=account.id, mock_id=mock_id) is not None
    assert mocks.get_mock(session=db, user_id=guest_id, mock_id=mock_id) is None
    assert not db.exec(select(CardProgress).where(CardProgress.user_id == guest_id)).all()


@pytest.mark.parametrize(
    "slug", ["paged-kv-cache", "speculative-decoding", "sampling", "int8-kv-cache", "continuous-batching"]
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

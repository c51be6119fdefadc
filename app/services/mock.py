"""Timed mock interviews: set-up, the server's clock, the interviewer's flow, scoring and the report.

The clock. An interview stores its start and its deadline; every request compares the
injected clock's "now" (app/services/clock.py) with the deadline. From the deadline on,
nothing more is accepted and the interview closes itself, on the first request that
touches it. There is no pause. The user may end it early; it also ends once every
question is answered when there is no coding problem.

The questions. `plan_questions` turns the length into a number of card questions (about
four minutes for an answer and its follow-up; the coding problem gets up to fifteen
minutes, at most half the interview). Cards are drawn from the chosen topics (all of them
by default), the chosen difficulty first and the nearest others when too few match, with
weights toward what the user needs:

- a topic weighs 1 + 2 x (1 - mastery) + 1 if it has cards due (mastery from FSRS, as on
  the progress page), and each card already drawn from a topic divides its weight by
  (1 + drawn)^2 so the interview spreads over topics;
- inside a topic a due card weighs 3, an unseen card 2, any other 1; a card asked in one
  of the user's last three mock interviews weighs a quarter of that.

They are asked in an interviewer's order: easy before hard, topic by topic in study order.
One card (not the opener) whose topic has numeric problems is asked as a numeric problem
(app/services/numeric.py) and, from three questions up, another as multiple choice (the
quiz's builder); the rest are asked as spoken questions. Every card question is followed
by one of the card's follow-ups. The coding problem comes last and is graded by the
grading queue like any submission, inside the same clock.

Scoring. Once the clock stops, the user ticks the key points each answer covered and
whether each follow-up answer covered the card's answer; numeric and multiple-choice
answers were checked when given. A card question scores 0.7 x its main answer (share of
key points covered, or 1 right / 0.5 partly right / 0 wrong) + 0.3 x its follow-up; a
question asked but not answered scores 0, and so does one the clock never reached. The
coding problem scores 1 when a submission passed, else half the share of the grader's
tests the last graded submission passed, and counts double in the overall score. Each
question asked feeds spaced repetition once, at scoring: Good from 0.8, Hard from 0.5, Again
below. The coding problem's verdicts feed it already, as every graded submission does
(app/services/grading.py).

Common wrong answers. An answer (or follow-up answer) "matches" a card's common wrong
answer when it contains at least half of the wrong answer's content words, at least three
of them (all of them when it has fewer), and at least one of its distinctive words. Content
words are words of three letters or more that are not stop words, compared after stripping
a few endings (-ally, -ly, -ing, -ed, -es, -s, -e), so "quadratically" meets "quadratic"
and "caches" meets "cache". Distinctive words are the content words found in at most a
quarter of the bank's cards: "token", "cache" or "attention" are in every answer, right or
wrong, while "linear" or "approximation" are what makes a wrong answer wrong. A picked
multiple-choice option that is a wrong answer always matches. It is a prompt to re-read the
card, not a verdict: "the cache does not grow quadratically with the length" matches "it
grows with the square of the sequence length, because attention is quadratic".
"""

from __future__ import annotations

import random
import re
import secrets
from collections import Counter
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from typing import Any

from fsrs import Rating
from sqlalchemy import ColumnElement, update
from sqlmodel import Session, col, select

from app.config import Settings
from app.content.catalog import Catalog
from app.content.challenges import Challenge
from app.models import Card, CardProgress, MockInterview, MockItem, Submission, Topic, User
from app.services import key_point_suggestions, numeric, scheduling
from app.services.errors import ServiceError
from app.services.grading import GradingQueue
from app.services.quiz import build_choice, grade_choice

LENGTHS = (15, 30, 45)
DIFFICULTIES = ("easy", "medium", "hard")
DIFFICULTY_RANK = {"easy": 0, "medium": 1, "hard": 2}
MAIN_WEIGHT, FOLLOW_UP_WEIGHT = 0.7, 0.3
CHALLENGE_WEIGHT = 2
GOOD_FROM, HARD_FROM = 0.8, 0.5
RECENT_MOCKS = 3
COMMON_SHARE = 0.25  # a word in more than this share of the cards is too common to tell a wrong answer
MOVED_ON = "That question was already answered, perhaps in another tab: the interview has moved on."


class MockError(ServiceError):
    """A request that does not fit the interview's state; `status` is the HTTP status to answer with."""


@dataclass(frozen=True)
class MockSpec:
    minutes: int
    topics: tuple[str, ...] = ()
    difficulty: str | None = None
    with_challenge: bool = True
    seed: int | None = field(default=None, compare=False)  # tests fix it; otherwise random


# --- planning and drawing the questions ------------------------------------------------------------


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
    query = select(Card).where(col(Card.retired).is_(False))
    if spec.topics:
        query = query.where(col(Card.topic).in_(list(spec.topics)))
    pool = list(session.exec(query).all())
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


def assign_kinds(cards: Sequence[Card]) -> list[str]:
    """Spoken questions, with one numeric problem and (from three questions) one multiple choice."""
    kinds = ["recall"] * len(cards)
    numeric_at = next((i for i in range(1, len(cards)) if numeric.has_numeric(cards[i].topic)), None)
    if numeric_at is not None:
        kinds[numeric_at] = "numeric"
    if len(cards) >= 3:
        choice_at = next(i for i in range(1, len(cards)) if kinds[i] == "recall")
        kinds[choice_at] = "choice"
    return kinds


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
        select(Submission.challenge).where(Submission.user_id == user_id, Submission.verdict == "passed")
    ).all()
    return set(rows)


def build_payload(
    *, card: Card, kind: str, rng: random.Random, topic_cards: Sequence[Card]
) -> dict[str, Any]:
    """What the item asks, frozen: the follow-up, and the numeric problem or the options."""
    payload: dict[str, Any] = {"follow_up": rng.choice(card.data["follow_ups"])}
    if kind == "numeric":
        question = numeric.generate(card.topic, rng)
        assert question is not None
        payload["numeric"] = question.to_payload()
    elif kind == "choice":
        payload["choice"] = build_choice(card, topic_cards, rng)
    return payload


def running_mock(*, session: Session, user_id: int, now: datetime) -> MockInterview | None:
    """The user's interview still on the clock, if any (closing any whose deadline has passed)."""
    for mock in session.exec(
        select(MockInterview).where(MockInterview.user_id == user_id, col(MockInterview.ended_at).is_(None))
    ).all():
        if not close_if_due(session=session, mock=mock, now=now):
            return mock
    return None


def start_mock(
    *, session: Session, user: User, spec: MockSpec, catalog: Catalog, settings: Settings, now: datetime
) -> MockInterview:
    """Draw the questions, freeze them, start the clock. MockError(422) for a bad set-up, 409 if one runs."""
    assert user.id is not None
    if not 1 <= spec.minutes <= settings.mock_max_minutes:
        raise MockError(f"Choose a length from 1 to {settings.mock_max_minutes} minutes", 422)
    if spec.difficulty is not None and spec.difficulty not in DIFFICULTIES:
        raise MockError("Choose a difficulty among easy, medium and hard (or mixed)", 422)
    known = set(session.exec(select(Topic.slug)).all())
    unknown = sorted(set(spec.topics) - known)
    if unknown:
        raise MockError(f"Unknown topic {unknown[0]!r}", 422)
    if running_mock(session=session, user_id=user.id, now=now) is not None:
        raise MockError("You already have a mock interview running: finish it or end it first", 409)

    rng = random.Random(spec.seed if spec.seed is not None else secrets.randbits(64))
    n = plan_questions(minutes=spec.minutes, with_challenge=spec.with_challenge, settings=settings)
    cards = select_cards(session=session, user=user, spec=spec, n=n, settings=settings, now=now, rng=rng)
    if not cards:
        raise MockError("No card matches those topics", 422)
    challenge = None
    if spec.with_challenge:
        challenge = choose_challenge(
            catalog=catalog,
            passed=passed_challenges(session=session, user_id=user.id),
            topics=spec.topics,
            difficulty=spec.difficulty,
            topic_weight=topic_weights(session=session, user=user, settings=settings, now=now),
            rng=rng,
        )
    by_topic: dict[str, list[Card]] = {}
    for c in session.exec(select(Card).where(col(Card.retired).is_(False))).all():
        by_topic.setdefault(c.topic, []).append(c)

    mock = MockInterview(
        user_id=user.id,
        minutes=spec.minutes,
        topics=list(spec.topics),
        difficulty=spec.difficulty,
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
                kind=kind,
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
                kind="challenge",
                challenge=challenge.slug,
                payload={},
            )
        )
    session.commit()
    session.refresh(mock)
    return mock


# --- reading interviews, with ownership ----------------------------------------------------------


def get_mock(*, session: Session, user_id: int, mock_id: int) -> MockInterview | None:
    """The interview if it belongs to this user; someone else's is indistinguishable from a missing one."""
    mock = session.get(MockInterview, mock_id)
    return mock if mock is not None and mock.user_id == user_id else None


def get_shared(*, session: Session, token: str) -> MockInterview | None:
    if not token or len(token) > 64 or token.startswith(REVOKED):
        return None
    mock = session.exec(select(MockInterview).where(MockInterview.share_token == token)).first()
    return mock if mock is not None and mock.scored_at is not None else None


def mock_items(*, session: Session, mock: MockInterview) -> list[MockItem]:
    return list(
        session.exec(
            select(MockItem).where(MockItem.interview_id == mock.id).order_by(col(MockItem.position))
        ).all()
    )


def history(*, session: Session, user_id: int, limit: int = 50) -> list[MockInterview]:
    return list(
        session.exec(
            select(MockInterview)
            .where(MockInterview.user_id == user_id)
            .order_by(col(MockInterview.started_at).desc(), col(MockInterview.id).desc())
            .limit(limit)
        ).all()
    )


def status(mock: MockInterview, now: datetime) -> str:
    """running | ended (clock stopped, not scored yet) | scored."""
    if mock.scored_at is not None:
        return "scored"
    if mock.ended_at is not None or now >= mock.deadline:
        return "ended"
    return "running"


def remaining_seconds(mock: MockInterview, now: datetime) -> float:
    if mock.ended_at is not None:
        return 0.0
    return max(0.0, (mock.deadline - now).total_seconds())


def current_item(items: Sequence[MockItem]) -> MockItem | None:
    """The question being asked: the first not done (the coding problem stays current to the end)."""
    return next((i for i in items if i.done_at is None), None)


def phase(item: MockItem) -> str:
    """question | follow_up | code."""
    if item.kind == "challenge":
        return "code"
    return "question" if item.answered_at is None else "follow_up"


# --- the clock -------------------------------------------------------------------------------------


def _close(*, session: Session, mock: MockInterview, at: datetime, by: str) -> None:
    """Stop the clock once: a second request racing this one changes nothing. Commits."""
    session.exec(
        update(MockInterview)  # type: ignore[call-overload]
        .where(col(MockInterview.id) == mock.id, col(MockInterview.ended_at).is_(None))
        .values(ended_at=at, ended_by=by)
    )
    session.commit()
    session.refresh(mock)


def close_if_due(*, session: Session, mock: MockInterview, now: datetime) -> bool:
    """Close the interview at its deadline once that has passed; True when it is over (either way)."""
    if mock.ended_at is None and now >= mock.deadline:
        _close(session=session, mock=mock, at=mock.deadline, by="deadline")
    return mock.ended_at is not None


def ensure_running(*, session: Session, mock: MockInterview, now: datetime) -> None:
    """MockError(409) with a clear message when the clock has stopped."""
    if close_if_due(session=session, mock=mock, now=now):
        if mock.ended_by == "deadline":
            at = mock.deadline.strftime("%H:%M:%S UTC")
            raise MockError(
                f"Time is up: the interview ended at {at}, and answers after the deadline are refused."
            )
        raise MockError("This interview is over: answers are no longer accepted.")


def finish(*, session: Session, mock: MockInterview, now: datetime) -> None:
    """The user ends the interview early (nothing is paused: the clock just stops)."""
    ensure_running(session=session, mock=mock, now=now)
    _close(session=session, mock=mock, at=now, by="user")


# --- answering ---------------------------------------------------------------------------------------


def answer(
    *,
    session: Session,
    mock: MockInterview,
    position: int,
    step: str,
    settings: Settings,
    now: datetime,
    text: str | None = None,
    value: str | None = None,
    unit: str | None = None,
    picked: Sequence[int] = (),
) -> MockItem:
    """Record the answer to the current question (step "question") or to its follow-up ("follow_up").

    MockError(409) after the deadline, or when the interview has moved past that step (another tab).
    """
    ensure_running(session=session, mock=mock, now=now)
    items = mock_items(session=session, mock=mock)
    item = current_item(items)
    if item is None or item.position != position or phase(item) != step:
        raise MockError(MOVED_ON)
    if item.kind == "challenge":
        raise MockError("The coding problem takes code: submit it from the editor.", 422)
    # A browser sends each line break of a textarea as CR LF; the page counts it as one character.
    text = (text or "").replace("\r\n", "\n").strip()
    if len(text) > settings.mock_answer_max_chars:
        limit = settings.mock_answer_max_chars
        raise MockError(f"An answer is limited to {limit:,} characters: this one has {len(text):,}.", 422)

    values: dict[str, Any]
    guard: ColumnElement[bool]
    if step == "question":
        values = {"answered_at": now}
        if item.kind == "numeric":
            check = numeric.check_answer(item.payload["numeric"], value or "", unit)
            if (value or "").strip() and check.given is None:
                # Unreadable as a number in this question's units: asked again, never graded.
                raise MockError(check.message, 422)
            written = f"{(value or '').strip()} {unit or ''}".strip() if (value or "").strip() else ""
            values |= {
                "answer": written,
                "correct": check.correct,
                "response": {
                    "value": value or "",
                    "unit": unit,
                    "given": check.given,
                    "message": check.message if written else "No answer given.",
                },
            }
        elif item.kind == "choice":
            options = item.payload["choice"]["options"]
            chosen = set(picked)
            if any(not 0 <= i < len(options) for i in chosen):
                raise MockError("No such option", 422)
            rating = grade_choice(item.payload["choice"], chosen)
            values |= {
                "answer": "; ".join(options[i]["text"] for i in sorted(chosen)),
                "correct": rating == Rating.Good,
                "response": {"picked": sorted(chosen), "partial": rating == Rating.Hard},
            }
        else:
            values["answer"] = text
            values |= key_point_suggestions.mock_fields(session=session, item=item, text=text)
        if not item.payload.get("follow_up"):
            values["done_at"] = now
        guard = col(MockItem.answered_at).is_(None)
    else:
        values = {"follow_up_answer": text, "done_at": now}
        guard = col(MockItem.answered_at).is_not(None) & col(MockItem.done_at).is_(None)
    result = session.exec(
        update(MockItem).where(col(MockItem.id) == item.id, guard).values(**values)  # type: ignore[call-overload]
    )
    if result.rowcount != 1:  # another tab got there first
        session.rollback()
        raise MockError(MOVED_ON)
    if "done_at" in values:
        following = [i for i in items if i.position == position + 1]
        if following:
            session.exec(
                update(MockItem)  # type: ignore[call-overload]
                .where(col(MockItem.id) == following[0].id, col(MockItem.asked_at).is_(None))
                .values(asked_at=now)
            )
        else:
            _close(session=session, mock=mock, at=now, by="completed")
    session.commit()
    session.refresh(item)
    return item


def submit_code(
    *, session: Session, mock: MockInterview, grading: GradingQueue, code: str, now: datetime
) -> Submission:
    """Queue code for the interview's coding problem; it is graded like any submission."""
    ensure_running(session=session, mock=mock, now=now)
    item = current_item(mock_items(session=session, mock=mock))
    if item is None or item.kind != "challenge" or item.challenge is None:
        raise MockError("The coding problem comes after the questions: answer them first.")
    submission = grading.submit(session=session, user_id=mock.user_id, challenge=item.challenge, code=code)
    session.refresh(item)
    item.response = {"submissions": [*(item.response or {}).get("submissions", []), submission.id]}
    if item.answered_at is None:
        item.answered_at = now
    session.add(item)
    session.commit()
    session.refresh(submission)
    return submission


def challenge_submissions(*, session: Session, item: MockItem) -> list[Submission]:
    ids: list[str] = (item.response or {}).get("submissions", [])
    found = {s.id: s for s in session.exec(select(Submission).where(col(Submission.id).in_(ids))).all()}
    return [found[i] for i in ids if i in found]


# --- common wrong answers --------------------------------------------------------------------------

_STOP_WORDS = frozenset(
    """the a an and or but nor of to in on at for with by from as is are was were be been being it its
    this that these those there their they them then than so such not no do does did done can could
    would should will shall may might must have has had having you your we our me my he she his her
    which what who whom whose when where why how all any each every both few more most other some own
    same too very just also only into over under again once here about above below out off because
    while until else one two per via itself just like get gets got make makes made use uses used""".split()
)
_SUFFIXES = ("ally", "ly", "ing", "ed", "es", "s", "e")
_WORD = re.compile(r"[a-z][a-z0-9_]*")


def _stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def content_words(text: str) -> set[str]:
    return {_stem(w) for w in _WORD.findall(text.lower()) if len(w) >= 3 and w not in _STOP_WORDS}


def common_words(texts: Sequence[str], share: float = COMMON_SHARE) -> set[str]:
    """Content words found in more than `share` of the texts (one text per card)."""
    counts: Counter[str] = Counter()
    for text in texts:
        counts.update(content_words(text))
    return {w for w, n in counts.items() if n > share * len(texts)}


_common_cache: dict[frozenset[str], set[str]] = {}


def bank_common_words(*, session: Session) -> set[str]:
    """common_words over the live cards, recomputed only when the bank changes."""
    key = frozenset(session.exec(select(Card.content_hash).where(col(Card.retired).is_(False))).all())
    if key not in _common_cache:
        texts = session.exec(select(Card.search_text).where(col(Card.retired).is_(False))).all()
        _common_cache.clear()
        _common_cache[key] = common_words(texts)
    return _common_cache[key]


def matches_wrong_answer(text: str, wrong: str, common: AbstractSet[str] = frozenset()) -> list[str]:
    """The content words an answer shares with a wrong answer if it matches (see the docstring); else []."""
    theirs = content_words(wrong)
    shared = content_words(text) & theirs
    distinctive = theirs - common
    if (
        theirs
        and len(shared) >= min(3, len(theirs))
        and len(shared) >= len(theirs) / 2
        and (not distinctive or shared & distinctive)
    ):
        return sorted(shared)
    return []


# --- scoring -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Mark:
    """What the user ticked for one question: key points covered, follow-up covered."""

    key_points: tuple[int, ...] = ()
    follow_up: bool = False


def main_score(item: MockItem, n_points: int) -> float:
    if item.answered_at is None:
        return 0.0
    if item.kind == "recall":
        return len(item.covered or []) / n_points if n_points else 0.0
    if item.kind == "choice" and not item.correct:
        return 0.5 if (item.response or {}).get("partial") else 0.0
    return 1.0 if item.correct else 0.0


def item_score(item: MockItem, n_points: int) -> float:
    return MAIN_WEIGHT * main_score(item, n_points) + FOLLOW_UP_WEIGHT * (
        1.0 if item.follow_up_covered else 0.0
    )


def rating_for(score: float) -> Rating:
    return Rating.Good if score >= GOOD_FROM else Rating.Hard if score >= HARD_FROM else Rating.Again


def score_mock(
    *,
    session: Session,
    user: User,
    mock: MockInterview,
    marks: Mapping[int, Mark],
    settings: Settings,
    now: datetime,
) -> None:
    """Store the user's ticks, feed every question asked into spaced repetition, once. Commits."""
    if not close_if_due(session=session, mock=mock, now=now):
        raise MockError("The interview is still running: score it once the clock stops.")
    if mock.scored_at is not None:
        raise MockError("This interview is already scored.")
    assert user.id == mock.user_id
    for item in mock_items(session=session, mock=mock):
        if item.kind == "challenge" or item.asked_at is None or item.card_id is None:
            continue
        card = session.get(Card, item.card_id)
        assert card is not None
        mark = marks.get(item.position, Mark())
        n_points = len(card.data["key_points"])
        if item.kind == "recall":
            item.covered = sorted({i for i in mark.key_points if 0 <= i < n_points}) if item.answer else []
        item.follow_up_covered = bool(mark.follow_up and item.follow_up_answer)
        rating = rating_for(item_score(item, n_points))
        progress = scheduling.review_card(
            session=session,
            user=user,
            card_id=card.id,
            rating=rating,
            source="mock",
            settings=settings,
            now=now,
        )
        item.rating, item.due_after = int(rating), progress.due
        session.add(item)
    mock.scored_at = now
    session.add(mock)
    session.commit()
    session.refresh(mock)


# --- the report ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class WrongMatch:
    answer: str
    why: str
    words: list[str]  # the shared content words ([] for a picked option)
    where: str  # answer | follow_up | option


@dataclass(frozen=True)
class ChallengeOutcome:
    slug: str
    title: str
    verdict: str | None  # the counted submission's verdict; None before any is graded
    passed: bool
    tests_passed: int
    tests_total: int
    attempts: int
    final: bool  # every submission graded
    score: float
    code: str | None  # the counted submission's code
    tests: list[dict[str, Any]]
    diagnosis: list[str]


@dataclass(frozen=True)
class ItemReport:
    position: int
    kind: str
    reached: bool
    answered: bool
    seconds: int | None  # time on the question, follow-up included
    answer_seconds: int | None
    follow_up_seconds: int | None
    score: float
    card_id: str | None = None
    card_title: str | None = None
    topic: str | None = None
    topic_title: str | None = None
    question: str | None = None
    answer: str | None = None
    key_points: list[str] = field(default_factory=list)
    covered: list[int] = field(default_factory=list)
    suggested: list[int] | None = None  # what the matcher pre-ticked (None: no suggestion was made)
    suggested_by: str | None = None  # semantic | lexical
    follow_up_question: str | None = None
    follow_up_strong: str | None = None
    follow_up_answer: str | None = None
    follow_up_covered: bool | None = None
    correct: bool | None = None
    numeric: dict[str, Any] | None = None  # prompt, the answer given, the check's message, worked solution
    choice: dict[str, Any] | None = None  # prompt, options with correct flags, picked
    matched: list[WrongMatch] = field(default_factory=list)
    rating: str | None = None
    due_after: datetime | None = None
    challenge: ChallengeOutcome | None = None


@dataclass(frozen=True)
class TopicScore:
    slug: str
    title: str
    questions: int
    reached: int
    score: float


@dataclass(frozen=True)
class ReviewLink:
    kind: str  # card | challenge
    target: str
    title: str
    url: str
    reason: str
    rating: str | None = None
    due_after: datetime | None = None


@dataclass(frozen=True)
class Report:
    minutes: int
    day: str
    topics: list[str]
    difficulty: str | None
    ended_by: str | None
    seconds_used: int
    score: float | None  # None until scored
    scored: bool
    by_topic: list[TopicScore]
    items: list[ItemReport]
    review: list[ReviewLink]

    def to_json(self) -> dict[str, Any]:
        return _jsonable(asdict(self))  # type: ignore[no-any-return]


def _jsonable(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    return value


def _seconds(start: datetime | None, end: datetime | None) -> int | None:
    if start is None or end is None:
        return None
    return max(0, round((end - start).total_seconds()))


def challenge_outcome(*, session: Session, item: MockItem, catalog: Catalog) -> ChallengeOutcome:
    slug = item.challenge or ""
    challenge = catalog.challenge(slug)
    submissions = challenge_submissions(session=session, item=item)
    graded = [s for s in submissions if s.status == "done" and s.result is not None]
    counted = next((s for s in graded if s.verdict == "passed"), graded[-1] if graded else None)
    tests: list[dict[str, Any]] = list((counted.result or {}).get("tests", [])) if counted else []
    passed = counted is not None and counted.verdict == "passed"
    n_passed = sum(1 for t in tests if t.get("passed"))
    score = 1.0 if passed else (0.5 * n_passed / len(tests) if tests else 0.0)
    shown = counted or (submissions[-1] if submissions else None)
    return ChallengeOutcome(
        slug=slug,
        title=challenge.meta.title if challenge else slug,
        verdict=counted.verdict if counted else None,
        passed=passed,
        tests_passed=n_passed,
        tests_total=len(tests),
        attempts=len(submissions),
        final=len(graded) == len(submissions),
        score=score,
        code=shown.code if shown else None,
        tests=[
            {"name": t.get("name"), "passed": t.get("passed"), "message": t.get("message")} for t in tests
        ],
        diagnosis=list((counted.result or {}).get("diagnosis", [])) if counted else [],
    )


def _wrong_matches(item: MockItem, card: Card, common: AbstractSet[str]) -> list[WrongMatch]:
    found: list[WrongMatch] = []
    for where, text in (("answer", item.answer), ("follow_up", item.follow_up_answer)):
        if not text or item.kind == "choice" and where == "answer":
            continue
        for wrong in card.data["wrong_answers"]:
            words = matches_wrong_answer(text, wrong["answer"], common)
            if words and all(m.answer != wrong["answer"] for m in found):
                found.append(WrongMatch(wrong["answer"], wrong["why"], words, where))
    if item.kind == "choice" and item.response:
        options = item.payload["choice"]["options"]
        for i in item.response.get("picked", []):
            if not options[i]["correct"]:
                found.append(WrongMatch(options[i]["text"], options[i]["why"] or "", [], "option"))
    return found


def _suggested_fields(item: MockItem, n_points: int) -> dict[str, Any]:
    got = key_point_suggestions.read(item.suggested, n_points)
    return {"suggested": got.points, "suggested_by": got.method.value} if got else {}


def build_report(*, session: Session, mock: MockInterview, catalog: Catalog, now: datetime) -> Report:
    """Everything the report shows, and nothing about its owner: safe for the shared link."""
    items = mock_items(session=session, mock=mock)
    cards = {
        c.id: c
        for c in session.exec(
            select(Card).where(col(Card.id).in_([i.card_id for i in items if i.card_id]))
        ).all()
    }
    titles = {t.slug: t.title for t in session.exec(select(Topic)).all()}
    common = bank_common_words(session=session)
    ended = mock.ended_at or min(now, mock.deadline)
    reports: list[ItemReport] = []
    for item in items:
        end = item.done_at or (ended if item.asked_at else None)
        if item.kind == "challenge":
            outcome = challenge_outcome(session=session, item=item, catalog=catalog)
            reports.append(
                ItemReport(
                    position=item.position,
                    kind=item.kind,
                    reached=item.asked_at is not None,
                    answered=outcome.attempts > 0,
                    seconds=_seconds(item.asked_at, end),
                    answer_seconds=None,
                    follow_up_seconds=None,
                    score=outcome.score,
                    challenge=outcome,
                )
            )
            continue
        card = cards[item.card_id or ""]
        n_points = len(card.data["key_points"])
        follow = item.payload.get("follow_up") or {}
        numeric_view = None
        if item.kind == "numeric":
            problem = item.payload["numeric"]
            numeric_view = {
                "prompt": problem["prompt"],
                "answer_text": problem["answer_text"],
                "solution": problem["solution"],
                "message": (item.response or {}).get("message"),
            }
        choice_view = None
        if item.kind == "choice":
            choice_view = {
                "prompt": item.payload["choice"]["prompt"],
                "options": item.payload["choice"]["options"],
                "picked": (item.response or {}).get("picked", []),
            }
        reports.append(
            ItemReport(
                position=item.position,
                kind=item.kind,
                reached=item.asked_at is not None,
                answered=item.answered_at is not None,
                seconds=_seconds(item.asked_at, end),
                answer_seconds=_seconds(item.asked_at, item.answered_at or end),
                follow_up_seconds=_seconds(item.answered_at, end) if item.answered_at else None,
                score=item_score(item, n_points) if mock.scored_at else 0.0,
                card_id=card.id,
                card_title=card.title,
                topic=card.topic,
                topic_title=titles.get(card.topic, card.topic),
                question=item.payload["numeric"]["prompt"]
                if item.kind == "numeric"
                else card.data["question"],
                answer=item.answer,
                key_points=list(card.data["key_points"]),
                covered=list(item.covered or []),
                **_suggested_fields(item, n_points),
                follow_up_question=follow.get("question"),
                follow_up_strong=follow.get("answer"),
                follow_up_answer=item.follow_up_answer,
                follow_up_covered=item.follow_up_covered,
                correct=item.correct,
                numeric=numeric_view,
                choice=choice_view,
                matched=_wrong_matches(item, card, common),
                rating=scheduling.RATING_NAMES[Rating(item.rating)] if item.rating else None,
                due_after=item.due_after,
            )
        )

    card_items = [r for r in reports if r.kind != "challenge"]
    by_topic: dict[str, list[ItemReport]] = {}
    for r in card_items:
        by_topic.setdefault(r.topic or "", []).append(r)
    topic_scores = [
        TopicScore(
            slug=slug,
            title=rows[0].topic_title or slug,
            questions=len(rows),
            reached=sum(1 for r in rows if r.reached),
            score=sum(r.score for r in rows) / len(rows),
        )
        for slug, rows in by_topic.items()
    ]
    coding = [r for r in reports if r.challenge is not None]
    total_weight = len(card_items) + CHALLENGE_WEIGHT * len(coding)
    overall = (
        sum(r.score for r in card_items) + CHALLENGE_WEIGHT * sum(r.score for r in coding)
    ) / total_weight

    review: list[ReviewLink] = []
    for r in sorted(card_items, key=lambda r: r.score):
        if not r.reached:
            continue
        reasons = []
        if r.score < GOOD_FROM:
            reasons.append(f"scored {round(r.score * 100)}%")
        if r.matched:
            reasons.append("your answer echoed a common wrong answer")
        if reasons and r.card_id:
            review.append(
                ReviewLink(
                    "card",
                    r.card_id,
                    r.card_title or r.card_id,
                    f"/cards/{r.card_id}",
                    "; ".join(reasons).capitalize(),
                    r.rating,
                    r.due_after,
                )  # fmt: skip
            )
    for r in coding:
        assert r.challenge is not None
        if not r.challenge.passed:
            reason = (
                "Not attempted"
                if not r.challenge.attempts
                else f"Verdict: {r.challenge.verdict or 'grading'}"
            )
            review.append(
                ReviewLink(
                    "challenge",
                    r.challenge.slug,
                    r.challenge.title,
                    f"/challenges/{r.challenge.slug}",
                    reason,
                )
            )

    return Report(
        minutes=mock.minutes,
        day=mock.started_at.date().isoformat(),
        topics=[titles.get(t, t) for t in mock.topics],
        difficulty=mock.difficulty,
        ended_by=mock.ended_by,
        seconds_used=_seconds(mock.started_at, ended) or 0,
        score=overall if mock.scored_at else None,
        scored=mock.scored_at is not None,
        by_topic=topic_scores,
        items=reports,
        review=review,
    )


# --- sharing -------------------------------------------------------------------------------------------


# A revoked link's token stays in the row under this prefix (no lookup matches it as a live
# token), so that opening the old link can say it was revoked rather than that nothing is there.
REVOKED = "revoked:"


def active_token(mock: MockInterview) -> str | None:
    """The live share token, or None when the report is not shared (never shared, or revoked)."""
    token = mock.share_token
    return token if token and not token.startswith(REVOKED) else None


def share(*, session: Session, mock: MockInterview) -> str:
    """The report's read-only link token: made once, kept until revoked."""
    if mock.scored_at is None:
        raise MockError("Score the interview before sharing its report.")
    token = active_token(mock)
    if token is None:
        token = secrets.token_urlsafe(24)
        mock.share_token = token
        session.add(mock)
        session.commit()
        session.refresh(mock)
    return token


def revoke(*, session: Session, mock: MockInterview) -> None:
    """The old link stops opening the report (it answers 410, revoked); sharing again makes a new one."""
    token = active_token(mock)
    if token is None:
        return
    mock.share_token = REVOKED + token
    session.add(mock)
    session.commit()


def was_revoked(*, session: Session, token: str) -> bool:
    """Whether this token opened a report until its owner revoked it (the latest revoked link)."""
    if not token or len(token) > 64 - len(REVOKED) or token.startswith(REVOKED):
        return False
    marker = REVOKED + token
    return (
        session.exec(select(MockInterview.id).where(MockInterview.share_token == marker)).first() is not None
    )

"""The report of a scored (or ended) mock interview: every question with the answer, the time it
took, its score and any common wrong answer it echoed; scores by topic; what to review.

It says nothing about the interview's owner, so the shared link can show it as it is.
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from fsrs import Rating
from sqlmodel import Session, col, select

from app.content.catalog import Catalog
from app.enums import MockItemKind, SubmissionStatus
from app.models import Card, MockInterview, MockItem, Topic
from app.services import key_point_suggestions, scheduling
from app.services.card_content import content
from app.services.mock.debrief import Missed, debrief_of
from app.services.mock.interviews import challenge_submissions, mock_items
from app.services.mock.rubric import (
    OVERALL_RULE,
    RATING_NAMES,
    Rubric,
    WrongMatch,
    interview_overall,
    rubric_of,
)
from app.services.mock.scoring import CHALLENGE_WEIGHT, GOOD_FROM, item_score
from app.services.wrong_answers import bank_common_words, matches_wrong_answer
from graders.verdict import Verdict


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
    follow_up_reason: str | None = None  # why the interviewer asked it (app/services/mock/interviewer.py)
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
    rubric: Rubric | None = None  # once scored, for a card question the clock reached (rubric.py)
    debrief: list[Missed] = field(default_factory=list)  # a spoken answer's missed points (debrief.py)


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
    rubric_overall: int | None = None  # 1-4, the mean of the questions' overall ratings
    rubric_overall_name: str | None = None
    rubric_rule: str = OVERALL_RULE

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


def _suggested_fields(item: MockItem, n_points: int) -> dict[str, Any]:
    """What the matcher pre-ticked on this answer and how, for the report beside what was confirmed."""
    got = key_point_suggestions.read(item.suggested, n_points)
    return {"suggested": got.points, "suggested_by": got.method.value} if got else {}


def challenge_outcome(*, session: Session, item: MockItem, catalog: Catalog) -> ChallengeOutcome:
    slug = item.challenge or ""
    challenge = catalog.challenge(slug)
    submissions = challenge_submissions(session=session, item=item)
    graded = [s for s in submissions if s.status == SubmissionStatus.DONE and s.result is not None]
    counted = next((s for s in graded if s.verdict == Verdict.PASSED), graded[-1] if graded else None)
    tests: list[dict[str, Any]] = list((counted.result or {}).get("tests", [])) if counted else []
    passed = counted is not None and counted.verdict == Verdict.PASSED
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
        if not text or item.kind == MockItemKind.CHOICE and where == "answer":
            continue
        for wrong in content(card).wrong_answers:
            words = matches_wrong_answer(text, wrong.answer, common)
            if words and all(m.answer != wrong.answer for m in found):
                found.append(WrongMatch(wrong.answer, wrong.why, words, where))
    if item.kind == MockItemKind.CHOICE and item.response:
        options = item.payload["choice"]["options"]
        for i in item.response.get("picked", []):
            if not options[i]["correct"]:
                found.append(WrongMatch(options[i]["text"], options[i]["why"] or "", [], "option"))
    return found


def _challenge_report(
    *, session: Session, item: MockItem, catalog: Catalog, end: datetime | None
) -> ItemReport:
    outcome = challenge_outcome(session=session, item=item, catalog=catalog)
    return ItemReport(
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


def _card_report(
    *,
    item: MockItem,
    card: Card,
    scored: bool,
    topic_title: str,
    common: AbstractSet[str],
    end: datetime | None,
) -> ItemReport:
    asked = content(card)
    n_points = len(asked.key_points)
    follow = item.payload.get("follow_up") or {}
    matched = _wrong_matches(item, card, common)
    numeric_view = None
    if item.kind == MockItemKind.NUMERIC:
        problem = item.payload["numeric"]
        numeric_view = {
            "prompt": problem["prompt"],
            "answer_text": problem["answer_text"],
            "solution": problem["solution"],
            "message": (item.response or {}).get("message"),
        }
    choice_view = None
    if item.kind == MockItemKind.CHOICE:
        choice_view = {
            "prompt": item.payload["choice"]["prompt"],
            "options": item.payload["choice"]["options"],
            "picked": (item.response or {}).get("picked", []),
        }
    return ItemReport(
        position=item.position,
        kind=item.kind,
        reached=item.asked_at is not None,
        answered=item.answered_at is not None,
        seconds=_seconds(item.asked_at, end),
        answer_seconds=_seconds(item.asked_at, item.answered_at or end),
        follow_up_seconds=_seconds(item.answered_at, end) if item.answered_at else None,
        score=item_score(item, n_points) if scored else 0.0,
        card_id=card.id,
        card_title=card.title,
        topic=card.topic,
        topic_title=topic_title,
        question=item.payload["numeric"]["prompt"] if item.kind == MockItemKind.NUMERIC else asked.question,
        answer=item.answer,
        key_points=list(asked.key_points),
        covered=list(item.covered or []),
        **_suggested_fields(item, n_points),
        follow_up_question=follow.get("question"),
        follow_up_reason=follow.get("reason"),
        follow_up_strong=follow.get("answer"),
        follow_up_answer=item.follow_up_answer,
        follow_up_covered=item.follow_up_covered,
        correct=item.correct,
        numeric=numeric_view,
        choice=choice_view,
        matched=matched,
        rating=scheduling.RATING_NAMES[Rating(item.rating)] if item.rating else None,
        due_after=item.due_after,
        rubric=rubric_of(item, asked.key_points, matched) if scored and item.asked_at else None,
        debrief=debrief_of(item, asked.key_points) if scored else [],
    )


def _topic_scores(card_items: list[ItemReport]) -> list[TopicScore]:
    by_topic: dict[str, list[ItemReport]] = {}
    for r in card_items:
        by_topic.setdefault(r.topic or "", []).append(r)
    return [
        TopicScore(
            slug=slug,
            title=rows[0].topic_title or slug,
            questions=len(rows),
            reached=sum(1 for r in rows if r.reached),
            score=sum(r.score for r in rows) / len(rows),
        )
        for slug, rows in by_topic.items()
    ]


def _review_links(card_items: list[ItemReport], coding: list[ItemReport]) -> list[ReviewLink]:
    """The cards that scored under Good or echoed a wrong answer, weakest first; coding not passed."""
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
                )
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
    return review


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
        if item.kind == MockItemKind.CHALLENGE:
            reports.append(_challenge_report(session=session, item=item, catalog=catalog, end=end))
            continue
        card = cards[item.card_id or ""]
        reports.append(
            _card_report(
                item=item,
                card=card,
                scored=mock.scored_at is not None,
                topic_title=titles.get(card.topic, card.topic),
                common=common,
                end=end,
            )
        )

    card_items = [r for r in reports if r.kind != MockItemKind.CHALLENGE]
    coding = [r for r in reports if r.challenge is not None]
    total_weight = len(card_items) + CHALLENGE_WEIGHT * len(coding)
    overall = (
        sum(r.score for r in card_items) + CHALLENGE_WEIGHT * sum(r.score for r in coding)
    ) / total_weight
    return Report(
        minutes=mock.minutes,
        day=mock.started_at.date().isoformat(),
        topics=[titles.get(t, t) for t in mock.topics],
        difficulty=mock.difficulty,
        ended_by=mock.ended_by,
        seconds_used=_seconds(mock.started_at, ended) or 0,
        score=overall if mock.scored_at else None,
        scored=mock.scored_at is not None,
        by_topic=_topic_scores(card_items),
        items=reports,
        review=_review_links(card_items, coding),
        **_rubric_overall(card_items),
    )


def _rubric_overall(card_items: list[ItemReport]) -> dict[str, Any]:
    rated = interview_overall(r.rubric for r in card_items if r.rubric is not None)
    return {"rubric_overall": rated, "rubric_overall_name": RATING_NAMES[rated] if rated else None}

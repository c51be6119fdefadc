"""Shared by the mock-interview tests: a fixed clock, starting an interview, answering it, a submission."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlmodel import Session

from app.config import Settings
from app.models import MockInterview, MockItem, Submission, User
from app.services import mock as mocks
from tests.services.factories import catalog

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

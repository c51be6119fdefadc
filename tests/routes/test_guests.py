"""Guest rows (issue 14, item 12): made only when a guest keeps something, rate-limited, expired."""

from __future__ import annotations

from datetime import timedelta

from fastapi.testclient import TestClient
from sqlmodel import Session, func, select

from app.config import ROOT, Settings
from app.db import make_engine
from app.main import create_app
from app.models import User, utcnow
from app.services.guests import purge_idle_guests
from tests.services.factories import start_quiz

# Every page and read-only API call a cookieless script could hammer.
READ_ONLY = [
    "/",
    "/topics",
    "/cards",
    "/cards/what-the-cache-stores",
    "/challenges",
    "/challenges/decode-step",
    "/api/challenges/decode-step/submissions",
    "/api/challenges/decode-step/solution",
    "/quiz",
    "/quiz?mode=due",
    "/api/quizzes",
    "/progress",
    "/api/progress",
    "/mock",
    "/api/mock",
    "/account",
    "/api/account",
    "/api/auth/me",
    "/api/submissions/0123456789abcdef01234567",
]


def user_rows(db_url: str) -> int:
    engine = make_engine(db_url)
    try:
        with Session(engine) as session:
            return int(session.exec(select(func.count()).select_from(User)).one())
    finally:
        engine.dispose()


def test_reading_creates_no_guest_rows(client: TestClient, db_url: str) -> None:
    for _ in range(3):
        for path in READ_ONLY:
            client.cookies.clear()  # a script without cookies: a new guest every request
            response = client.get(path, headers={"Accept": "text/html"})
            assert response.status_code < 500, (path, response.status_code)
    # The same guest coming back, reading everything again.
    for path in READ_ONLY:
        client.get(path)
    assert user_rows(db_url) == 0


def test_keeping_something_creates_exactly_one_row(client: TestClient, db_url: str) -> None:
    client.get("/")
    start_quiz(client, size=1)
    start_quiz(client, size=1)
    assert user_rows(db_url) == 1
    # The guest's pages now show what it kept.
    assert len(client.get("/api/quizzes").json()) == 2


def test_new_guest_rows_are_rate_limited_per_address(db_url: str) -> None:
    settings = Settings(
        database_url=db_url, content_root=ROOT / "questions", grading_workers=0, guests_per_hour=3
    )
    with TestClient(create_app(settings)) as client:
        for _ in range(3):
            client.cookies.clear()
            start_quiz(client, size=1)
        client.cookies.clear()
        refused = client.post("/api/quizzes", json={"topics": ["kv-memory"], "size": 1})
        assert refused.status_code == 429 and int(refused.headers["Retry-After"]) > 0
        assert "guest" in refused.json()["detail"]
    assert user_rows(db_url) == 3


def test_idle_empty_guests_expire_and_the_rest_stay(client: TestClient, db_url: str) -> None:
    start_quiz(client, size=1)  # a guest with a quiz, created now; backdated below
    engine = make_engine(db_url)
    long_ago = utcnow() - timedelta(days=40)
    try:
        with Session(engine) as session:
            kept = session.exec(select(User)).one()
            kept_token = kept.guest_token
            kept.created_at = long_ago
            session.add(User(guest_token="idle-empty", created_at=long_ago))
            session.add(User(guest_token="new-empty"))
            session.add(
                User(guest_token="idle-with-a-date", created_at=long_ago, interview_date=long_ago.date())
            )
            session.add(User(email="someone@example.com", password_hash="x", created_at=long_ago))
            session.commit()
            assert purge_idle_guests(session=session, idle_days=30) == 1
            left = {u.guest_token or u.email for u in session.exec(select(User)).all()}
        assert left == {kept_token, "new-empty", "idle-with-a-date", "someone@example.com"}
    finally:
        engine.dispose()


def test_every_table_a_user_owns_keeps_a_guest(db_url: str) -> None:
    """A guest whose only row is in any per-user table (a lab run, say) is not purged."""
    from app.models import LabRun
    from app.services.accounts import USER_TABLES

    assert LabRun in USER_TABLES
    engine = make_engine(db_url)
    long_ago = utcnow() - timedelta(days=40)
    try:
        with Session(engine) as session:
            guest = User(guest_token="lab-only", created_at=long_ago)
            session.add(guest)
            session.commit()
            session.add(LabRun(id="r1", user_id=guest.id, size="tiny"))
            session.commit()
            assert purge_idle_guests(session=session, idle_days=30) == 0
    finally:
        engine.dispose()

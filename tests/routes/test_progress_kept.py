"""The dashboard is kept per user and never shown stale: each of their writes and the clock move
it at once, and a write made elsewhere (another server, a worker) within RECHECK_S.

Every check compares the kept page with the JSON dashboard, which is built from the database on
each request: the two always agree.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session

from app.config import Settings
from app.main import create_app
from app.models import Submission, User
from app.services.clock import ManualClock
from app.services.personal_pages import RECHECK_S
from app.services.scheduling.scheduler import start_of_day
from tests.services.factories import fast_settings, finish_quiz, other_client, signup, start_quiz


@pytest.fixture
def settings(db_url: str) -> Settings:
    return fast_settings(db_url, new_cards_per_day=10)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(datetime(2026, 3, 2, 9, 0, tzinfo=UTC))


@pytest.fixture
def client(settings: Settings, clock: ManualClock) -> Iterator[TestClient]:
    app = create_app(settings)
    app.state.clock = clock
    with TestClient(app) as test_client:
        yield test_client


def stat(page: str, name: str) -> int:
    match = re.search(rf'id="stat-{name}">(\d+)<', page)
    assert match, f"no {name} on the page"
    return int(match.group(1))


def agrees(client: TestClient) -> dict:
    """The page (kept or not) shows what the JSON dashboard, built afresh, says."""
    board = client.get("/api/progress").json()
    for _ in range(2):  # the second from the kept page
        page = client.get("/progress").text
        assert stat(page, "reviews") == board["total_reviews"]
        assert stat(page, "due-now") == board["due"]["now"]
        assert stat(page, "due-today") == board["due"]["today"]
    return board


def test_a_review_a_verdict_and_the_clock_each_move_the_kept_dashboard(
    client: TestClient, clock: ManualClock
) -> None:
    signup(client, "ann@example.com")
    assert agrees(client)["total_reviews"] == 0
    finish_quiz(client, start_quiz(client, size=5), rating="again")
    board = agrees(client)
    assert board["total_reviews"] == 5 and board["due"]["now"] == 0
    # Cards rated Again fall due within minutes: the page follows the clock, not only writes.
    clock.advance(30 * 60)
    assert agrees(client)["due"]["now"] == 5
    # A day later the streak and today's counts move, with no write at all.
    clock.advance(24 * 3600)
    assert agrees(client)["reviews_today"] == 0
    # A submission and its verdict stored by a worker elsewhere show within RECHECK_S.
    user_id = client.get("/api/auth/me").json()["id"]
    with Session(client.app.state.engine) as session:  # type: ignore[attr-defined]
        session.add(Submission(id="s1", user_id=user_id, challenge="decode-step", code="x"))
        session.commit()
        time.sleep(RECHECK_S)
        assert "decode-step" in client.get("/progress").text
        row = session.get(Submission, "s1")
        assert row is not None
        row.verdict, row.status = "passed", "done"
        session.commit()
    time.sleep(RECHECK_S)
    page = client.get("/progress").text
    assert re.search(r"decode-step.{0,400}passed", page, re.S), "the verdict is not on the kept page"


def test_a_setting_moves_it_and_each_session_keeps_its_own_token(
    client: TestClient, clock: ManualClock
) -> None:
    signup(client, "ann@example.com")
    today = agrees(client)["due"]["today"]
    user_id = client.get("/api/auth/me").json()["id"]
    with Session(client.app.state.engine) as session:  # type: ignore[attr-defined]
        user = session.get(User, user_id)
        assert user is not None
        user.interview_date = (clock.now() + timedelta(days=2)).date()  # every card before then
        session.commit()
    time.sleep(RECHECK_S)  # written elsewhere: seen at the next check
    assert agrees(client)["due"]["today"] > today
    laptop = other_client(client)
    laptop.post("/api/auth/login", json={"email": "ann@example.com", "password": "correct horse battery"})
    tokens = [
        set(re.findall(r'name="csrf_token" value="([^"]+)"', c.get("/progress").text))
        for c in (client, laptop)
    ]
    assert tokens[0] and tokens[1] and not tokens[0] & tokens[1]


def test_nobody_gets_another_users_kept_dashboard(client: TestClient) -> None:
    signup(client, "owner@example.com")
    finish_quiz(client, start_quiz(client))
    assert stat(client.get("/progress").text, "reviews") == 5
    someone = other_client(client)
    signup(someone, "someone@example.com")
    page = someone.get("/progress").text
    assert stat(page, "reviews") == 0 and "owner@example.com" not in page
    client.post("/api/auth/logout", headers={"X-Requested-With": "fetch"})
    assert stat(client.get("/progress").text, "reviews") == 0  # a fresh guest now


def test_visitors_without_a_row_share_one_kept_dashboard_each_with_their_own_token(
    client: TestClient, clock: ManualClock
) -> None:
    """A returning guest who has only read has no row: their dashboard is everybody's empty one,
    kept once for all of them (it was built on every request), and never a guest's with a row."""
    first, second = other_client(client), other_client(client)
    pages = [c.get("/progress").text for c in (first, second, first, second)]
    assert all(stat(page, "reviews") == 0 for page in pages) and len(set(pages)) == 1
    kept = client.app.state.site.guest_pages  # type: ignore[attr-defined]
    assert kept.get(("progress", "no-row", start_of_day(clock.now())), lambda: "t") is not None
    # At midnight the new cards it offers move: a page of its own for the new day.
    clock.advance(24 * 3600)
    assert kept.get(("progress", "no-row", start_of_day(clock.now())), lambda: "t") is None
    page = first.get("/progress").text
    assert stat(page, "reviews") == 0 and f'data-day="{clock.now().date()}"' in page  # today's heat map
    assert kept.get(("progress", "no-row", start_of_day(clock.now())), lambda: "t") is not None
    # One of them answers a quiz: their row's own page, and the shared one stays empty.
    finish_quiz(first, start_quiz(first))
    assert stat(first.get("/progress").text, "reviews") == 5
    assert stat(second.get("/progress").text, "reviews") == 0
    assert stat(other_client(client).get("/progress").text, "reviews") == 0

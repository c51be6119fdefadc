"""The dashboard and the home page's due count change with each review, and show only your own data."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session

from app.config import Settings
from app.models import Submission
from app.services.scheduling import record_challenge_result
from tests.services.factories import fast_settings, finish_quiz, other_client, signup, start_quiz


@pytest.fixture
def settings(db_url: str) -> Settings:
    return fast_settings(db_url, new_cards_per_day=10)


def due_on_home(client: TestClient) -> int:
    match = re.search(r'class="due-count">(\d+)<', client.get("/").text)
    assert match
    return int(match.group(1))


def test_the_dashboard_follows_a_quiz(client: TestClient) -> None:
    empty = client.get("/api/progress").json()
    assert empty["total_reviews"] == 0 and empty["streak"] == 0 and empty["history"] == []
    assert empty["due"]["today"] == 10 == due_on_home(client)  # today's new cards
    assert all(m["percent"] == 0 for m in empty["mastery"])

    quiz = start_quiz(client, topics=["kv-memory", "mha-mqa-gqa"], size=5)
    finish_quiz(client, quiz, rating="easy")
    board = client.get("/api/progress").json()
    today = datetime.now(UTC).date().isoformat()
    assert board["total_reviews"] == 5 == board["reviews_today"] == board["reviews_per_day"][today]
    assert board["streak"] == 1
    assert {h["card_id"] for h in board["history"]} == {i["card_id"] for i in quiz["items"]}
    assert all(h["due_after"] > h["reviewed_at"] for h in board["history"])
    mastery = {m["slug"]: m for m in board["mastery"]}
    assert mastery["kv-memory"]["seen"] + mastery["mha-mqa-gqa"]["seen"] == 5
    assert mastery["kv-memory"]["percent"] > 0 and mastery["rope"]["percent"] == 0
    assert board["due"]["new_today"] == 5  # 10 a day, 5 already introduced
    assert due_on_home(client) == board["due"]["today"]

    page = client.get("/progress").text
    assert 'id="stat-reviews">5<' in page and 'id="stat-streak">1<' in page
    assert f'data-day="{today}" data-count="5"' in page
    assert page.count('class="badge rating-') >= 5


def test_challenges_show_on_the_dashboard_and_count_as_reviews(client: TestClient) -> None:
    signup(client, "a@example.com")
    user_id = client.get("/api/auth/me").json()["id"]
    engine = client.app.state.engine  # type: ignore[attr-defined]
    with Session(engine) as session:
        session.add(
            Submission(id="s1", user_id=user_id, challenge="kv-cache-bytes", code="x", verdict="passed")
        )
        session.add(Submission(id="s2", user_id=user_id, challenge="decode-step", code="x", verdict="failed"))
        session.commit()
        record_challenge_result(
            session=session, user_id=user_id, slug="kv-cache-bytes", passed=True, topics=["kv-memory"],
            settings=client.app.state.settings,  # type: ignore[attr-defined]
        )  # fmt: skip
    board = client.get("/api/progress").json()
    status = {c["slug"]: c["status"] for c in board["challenges"]}
    assert status["kv-cache-bytes"] == "passed" and status["decode-step"] == "failed"
    assert status["gqa-attention"] == "not started"
    assert {h["source"] for h in board["history"]} == {"challenge"} and board["total_reviews"] >= 3
    assert "challenge" in client.get("/progress").text


def test_nobody_sees_someone_elses_progress(client: TestClient) -> None:
    signup(client, "owner@example.com")
    finish_quiz(client, start_quiz(client))
    guest, account = other_client(client), other_client(client)
    signup(account, "someone@example.com")
    for visitor in (guest, account):
        board = visitor.get("/api/progress").json()
        assert board["total_reviews"] == 0 and board["history"] == [] and board["due"]["now"] == 0
        assert 'id="stat-reviews">0<' in visitor.get("/progress").text
    assert client.get("/api/progress").json()["total_reviews"] == 5


def _number(page: str, pattern: str) -> int:
    match = re.search(pattern, page)
    assert match, pattern
    return int(match.group(1))


def test_home_quiz_and_progress_state_the_same_counts(client: TestClient) -> None:
    """One definition of what is due on every page (issue 22): home's "to study today" is the
    dashboard's, the quiz's "due now" is the dashboard's, and its "Due now and new" offers exactly
    what is due now plus today's new cards, after easy ratings and after misses alike."""
    signup(client, "counts@example.com")
    finish_quiz(client, start_quiz(client, topics=["kv-memory"], size=3), rating="easy")
    finish_quiz(client, start_quiz(client, topics=["mha-mqa-gqa"], size=3), rating="again")
    board = client.get("/api/progress").json()["due"]
    home, quiz, progress = (client.get(p).text for p in ("/", "/quiz", "/progress"))
    assert _number(home, r'class="due-count">(\d+)<') == board["today"]
    assert _number(progress, r'id="stat-due-today">(\d+)<') == board["today"]
    assert "to study today" in home and "to study today" in progress
    due_now = _number(quiz, r'id="quiz-due-now">(\d+)<')
    assert due_now == _number(progress, r'id="stat-due-now">(\d+)<') == board["now"]
    assert _number(quiz, r'id="quiz-due-mode-count">(\d+)<') == board["now"] + board["new_today"]
    assert board["new_today"] == 10 - 6  # ten new a day, six introduced

    # A failed challenge brings its topic's cards forward: seen and due on every page, never
    # "0 / 4 seen but 4 due" on one and new on another.
    user_id = client.get("/api/auth/me").json()["id"]
    with Session(client.app.state.engine) as session:  # type: ignore[attr-defined]
        touched = record_challenge_result(
            session=session, user_id=user_id, slug="logits-processors", passed=False, topics=["sampling"],
            settings=client.app.state.settings,  # type: ignore[attr-defined]
        )  # fmt: skip
    assert touched >= 3
    client.app.state.personal_pages.forget(user_id)  # type: ignore[attr-defined]  # as a stored verdict does
    mastery = {m["slug"]: m for m in client.get("/api/progress").json()["mastery"]}
    sampling = mastery["sampling"]
    assert sampling["seen"] == sampling["due"] == sampling["cards"] == touched
    progress = client.get("/progress").text
    row = re.search(r'<tr data-topic="sampling">(.*?)</tr>', progress, re.S)
    assert row and f"<td>{touched} / {touched}</td>" in row.group(1) and f"<td>{touched}</td>" in row.group(1)
    assert all(m["due"] <= m["seen"] <= m["cards"] for m in mastery.values())
    quiz = client.get("/quiz").text
    never_seen = _number(quiz, r"(\d+) never seen")
    assert never_seen + sum(m["seen"] for m in mastery.values()) == sum(m["cards"] for m in mastery.values())
    assert _number(quiz, r'id="quiz-due-now">(\d+)<') == board["now"] + touched


def test_a_quiz_counts_its_cards_once_however_often_a_miss_comes_back(client: TestClient) -> None:
    """A 3-card quiz whose misses came back once each is 3 cards on its results and in the list of
    recent quizzes, not 6 (issue 22, item 11): a repeat asks a card again, it is not a new card."""
    signup(client, "repeats@example.com")
    quiz = start_quiz(client, topics=["kv-memory"], size=3, kinds=["recall"])
    finish_quiz(client, quiz, rating="again")
    again = client.get(f"/api/quizzes/{quiz['id']}").json()
    assert again["size"] == 6  # each miss asked once more at the end
    finish_quiz(client, {**again, "items": again["items"][3:]}, rating="good")
    results = client.get(f"/quiz/{quiz['id']}").text
    assert 'id="quiz-right">0<' in results and 'id="quiz-cards">3<' in results
    assert "3 questions asking a missed card again" in results
    listed = client.get("/quiz").text
    assert '<span class="quiz-cards">3 cards</span>' in listed and "3 asked again after a miss" in listed
    assert "6 cards" not in listed

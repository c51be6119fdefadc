"""The account page: study settings, the JSON export, deletion; each reaches only the visitor's own data."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session, select

from app.config import Settings
from app.models import CardProgress, Quiz, QuizItem, Review, Submission, User
from tests.services.factories import (
    PASSWORD,
    csrf,
    fast_settings,
    finish_quiz,
    other_client,
    signup,
    start_quiz,
)


@pytest.fixture
def settings(db_url: str) -> Settings:
    return fast_settings(db_url)


def study(client: TestClient) -> None:
    finish_quiz(client, start_quiz(client))
    assert (
        client.post("/api/challenges/kv-cache-bytes/submissions", json={"code": "x = 1"}).status_code == 202
    )


def count_rows(client: TestClient, user_id: int) -> dict[str, int]:
    with Session(client.app.state.engine) as session:  # type: ignore[attr-defined]
        return {
            table.__tablename__: len(session.exec(select(table).where(table.user_id == user_id)).all())
            for table in (Review, QuizItem, Quiz, CardProgress, Submission)
        }


def test_export_is_all_of_my_data_and_none_of_anyone_elses(client: TestClient) -> None:
    signup(client, "a@example.com")
    study(client)
    other = other_client(client)
    signup(other, "b@example.com")
    study(other)

    response = client.get("/account/export")
    assert response.status_code == 200 and response.headers["content-type"].startswith("application/json")
    assert "attachment" in response.headers["content-disposition"]
    data = response.json()
    me = data["user"]
    assert me["email"] == "a@example.com" and "password_hash" not in me and "argon2" not in response.text
    tables = data["tables"]
    # Every row of mine: the 5 reviews and questions of the quiz, plus the repeats its misses queued.
    rows = count_rows(client, me["id"])
    assert len(tables["review"]) == rows["review"] == 5 and len(tables["quizsession"]) == 1
    assert len(tables["quizitem"]) == rows["quizitem"] >= 5
    # A row's fields are named as its table's columns: a question points at its quiz by session_id.
    quiz_id = tables["quizsession"][0]["id"]
    assert all(r["session_id"] == quiz_id and "quiz_id" not in r for r in tables["quizitem"])
    assert len(tables["submission"]) == 1 and tables["submission"][0]["code"] == "x = 1"
    assert len(tables["cardprogress"]) == 5
    for rows in tables.values():
        assert {r["user_id"] for r in rows} <= {me["id"]}
    assert client.get("/api/account/export").json()["tables"] == tables
    assert "b@example.com" not in response.text


def test_delete_my_account_and_everything_in_it(client: TestClient) -> None:
    signup(client, "a@example.com")
    study(client)
    me = client.get("/api/auth/me").json()["id"]
    other = other_client(client)
    signup(other, "b@example.com")
    study(other)
    them = other.get("/api/auth/me").json()["id"]
    assert all(count_rows(client, me).values())

    token = csrf(client, "/account")
    wrong = client.post("/account/delete", data={"csrf_token": token, "password": "not my password"})
    assert wrong.status_code == 403 and "Wrong password." in wrong.text
    assert client.post("/account/delete", data={"password": PASSWORD}).status_code == 403  # no CSRF token
    gone = client.post(
        "/account/delete", data={"csrf_token": token, "password": PASSWORD}, follow_redirects=False
    )
    assert gone.status_code == 303

    assert not any(count_rows(client, me).values())
    with Session(client.app.state.engine) as session:  # type: ignore[attr-defined]
        assert session.get(User, me) is None
    assert client.get("/api/auth/me").json()["guest"] is True
    assert "account and all of its data are deleted" in client.get("/").text
    assert (
        client.post("/api/auth/login", json={"email": "a@example.com", "password": PASSWORD}).status_code
        == 401
    )
    # The other user lost nothing.
    assert all(count_rows(client, them).values())
    assert other.get("/api/progress").json()["total_reviews"] == 5


def test_delete_through_the_api(client: TestClient) -> None:
    signup(client, "a@example.com")
    study(client)
    assert client.request("DELETE", "/api/account", json={"password": "nope"}).status_code == 403
    assert client.request("DELETE", "/api/account", json={"password": PASSWORD}).status_code == 204
    assert client.get("/api/progress").json()["total_reviews"] == 0


def test_a_guest_can_erase_their_data(client: TestClient) -> None:
    study(client)
    assert client.get("/api/progress").json()["total_reviews"] == 5
    token = csrf(client, "/account")
    refused = client.post("/account/delete", data={"csrf_token": token, "confirm": "yes"})
    assert refused.status_code == 422
    client.post("/account/delete", data={"csrf_token": token, "confirm": "delete"})
    assert client.get("/api/progress").json()["total_reviews"] == 0


def test_study_settings_change_the_schedule(client: TestClient) -> None:
    signup(client, "a@example.com")
    assert client.get("/api/account").json()["desired_retention"] == 0.9
    token = csrf(client, "/account")
    interview = (datetime.now(UTC).date() + timedelta(days=3)).isoformat()
    saved = client.post(
        "/account/settings", data={"csrf_token": token, "retention": "95", "interview_date": interview}
    )
    assert saved.status_code == 200 and "Settings saved." in saved.text
    account = client.get("/api/account").json()
    assert account["desired_retention"] == 0.95 and account["interview_date"] == interview
    assert 'value="95"' in client.get("/account").text

    due = client.get("/api/progress").json()["due"]
    assert due["interview_in_days"] == 3 and due["new_today"] == -(-due["unseen"] // 3)
    finish_quiz(client, start_quiz(client, topics=["kv-memory"], size=3, kinds=["recall"]), rating="easy")
    for item in client.get("/api/quizzes").json()[0]["items"]:
        assert item["due"][:10] <= interview  # never past the interview

    bad = client.post(
        "/account/settings", data={"csrf_token": token, "retention": "50", "interview_date": "soon"}
    )
    assert bad.status_code == 422 and "between 70% and 99%" in bad.text and "Use a date" in bad.text
    assert client.put("/api/account/settings", json={"desired_retention": 0.5}).status_code == 422
    cleared = client.put(
        "/api/account/settings", json={"desired_retention": None, "interview_date": None}
    ).json()
    assert cleared["desired_retention"] == 0.9 and cleared["interview_date"] is None


def test_settings_are_per_user(client: TestClient) -> None:
    signup(client, "a@example.com")
    client.put("/api/account/settings", json={"desired_retention": 0.8, "interview_date": "2030-01-01"})
    other = other_client(client)
    signup(other, "b@example.com")
    assert other.get("/api/account").json()["desired_retention"] == 0.9
    assert other.get("/api/account").json()["interview_date"] is None
    assert re.search(r"a@example\.com", other.get("/account").text) is None

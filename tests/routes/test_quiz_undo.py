"""Undo of a quiz's last rating through the API and the page, only by the quiz's owner; and an Again
card coming back at the end of the quiz, seen through the API."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session, select

from app.config import Settings
from app.models import CardProgress, Review
from tests.services.factories import BODYLESS, csrf, fast_settings, other_client, signup, start_quiz


@pytest.fixture
def settings(db_url: str) -> Settings:
    return fast_settings(db_url)


def progress_rows(client: TestClient) -> list[tuple]:
    with Session(client.app.state.engine) as session:  # type: ignore[attr-defined]
        rows = session.exec(select(CardProgress).order_by(CardProgress.card_id)).all()
        fields = (
            "card_id",
            "state",
            "step",
            "stability",
            "difficulty",
            "due",
            "last_review",
            "reps",
            "lapses",
        )
        return [tuple(getattr(p, name) for name in fields) for p in rows]


def reviews(client: TestClient) -> int:
    with Session(client.app.state.engine) as session:  # type: ignore[attr-defined]
        return len(session.exec(select(Review)).all())


def test_undo_through_the_api_puts_everything_back(client: TestClient) -> None:
    quiz = start_quiz(client, topics=["rope"], size=2, kinds=["recall"])
    base = f"/api/quizzes/{quiz['id']}"
    client.post(f"{base}/items/0/answer", json={})
    client.post(f"{base}/items/0/rate", json={"rating": "good"})
    client.post(f"{base}/items/1/answer", json={})
    before_rows, before_due = progress_rows(client), client.get("/api/progress").json()["due"]
    assert client.post(f"{base}/items/1/rate", json={"rating": "again"}).status_code == 200
    assert len(client.get(base).json()["items"]) == 3  # Again: asked once more at the end

    undone = client.post(f"{base}/undo", headers=BODYLESS)
    assert undone.status_code == 200, undone.text
    body = undone.json()
    assert body["item"]["position"] == 1 and body["item"]["state"] == "revealed" and body["size"] == 2
    assert "rating" not in body["item"] and body["item"]["key_points"]
    assert progress_rows(client) == before_rows and reviews(client) == 1
    assert client.get("/api/progress").json()["due"] == before_due
    after = client.get(base).json()
    assert len(after["items"]) == 2 and after["current"] == 1 and after["finished_at"] is None
    # Rate again, as if the first rating never happened.
    assert client.post(f"{base}/items/1/rate", json={"rating": "easy"}).json()["rating"] == "easy"
    # Undo the Easy, then the Good before it, then nothing is left to undo.
    assert client.post(f"{base}/undo", headers=BODYLESS).json()["item"]["position"] == 1
    assert client.post(f"{base}/undo", headers=BODYLESS).json()["item"]["position"] == 0
    nothing = client.post(f"{base}/undo", headers=BODYLESS)
    assert nothing.status_code == 409 and "Nothing to undo" in nothing.text
    assert progress_rows(client) == [] and reviews(client) == 0


def test_the_undo_button_after_a_rating(client: TestClient) -> None:
    quiz = start_quiz(client, topics=["rope"], size=2, kinds=["recall"])
    qid = quiz["id"]
    token = csrf(client, f"/quiz/{qid}/items/0")
    assert 'id="undo"' not in client.get(f"/quiz/{qid}/items/0").text  # nothing rated yet
    client.post(f"/quiz/{qid}/items/0/answer", data={"csrf_token": token})
    rated = client.post(f"/quiz/{qid}/items/0/rate", data={"csrf_token": token, "rating": "hard"})
    assert rated.url.path == f"/quiz/{qid}/items/1"
    assert 'id="undo"' in rated.text and "<strong>Hard</strong>" in rated.text
    back = client.post(f"/quiz/{qid}/undo", data={"csrf_token": token})
    assert back.status_code == 200 and back.url.path == f"/quiz/{qid}/items/0"
    assert "Rating undone" in back.text and 'class="rating-buttons"' in back.text
    assert 'id="undo"' not in back.text
    # No token, no undo.
    assert client.post(f"/quiz/{qid}/undo", data={}).status_code == 403


def test_only_the_owner_can_undo(client: TestClient) -> None:
    signup(client, "owner@example.com")
    quiz = start_quiz(client, topics=["rope"], size=1, kinds=["recall"])
    base = f"/api/quizzes/{quiz['id']}"
    client.post(f"{base}/items/0/answer", json={})
    client.post(f"{base}/items/0/rate", json={"rating": "good"})
    intruder = other_client(client)
    signup(intruder, "intruder@example.com")
    assert intruder.post(f"{base}/undo", headers=BODYLESS).status_code == 404
    token = csrf(intruder, "/quiz")
    assert intruder.post(f"/quiz/{quiz['id']}/undo", data={"csrf_token": token}).status_code == 404
    assert client.get(base).json()["items"][0]["rating"] == "good"  # untouched
    assert client.post("/api/quizzes/999999/undo", headers=BODYLESS).status_code == 404


def test_an_again_card_comes_back_at_the_end(client: TestClient) -> None:
    quiz = start_quiz(client, topics=["rope"], size=2, kinds=["recall"])
    qid, first = quiz["id"], quiz["items"][0]["card_id"]
    token = csrf(client, f"/quiz/{qid}/items/0")
    client.post(f"/quiz/{qid}/items/0/answer", data={"csrf_token": token})
    page = client.post(f"/quiz/{qid}/items/0/rate", data={"csrf_token": token, "rating": "again"})
    assert "Question 2 of 3" in page.text
    client.post(f"/quiz/{qid}/items/1/answer", data={"csrf_token": token})
    repeat = client.post(f"/quiz/{qid}/items/1/rate", data={"csrf_token": token, "rating": "good"})
    assert repeat.url.path == f"/quiz/{qid}/items/2" and "Question 3 of 3" in repeat.text
    assert 'id="repeat-badge"' in repeat.text
    assert client.get(f"/api/quizzes/{qid}").json()["items"][2]["card_id"] == first

"""Suggested key points over HTTP: the suggest endpoint, a quiz recall answer, a mock and its report."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session, select

from app.config import Settings
from app.models import Card, MockItem
from tests.services.factories import csrf, fast_settings, signup, start_quiz

CARD = "what-the-cache-stores"
PARAPHRASE = "Queries are never cached, since no later position reads an old query again."


@pytest.fixture
def settings(db_url: str) -> Settings:
    return fast_settings(db_url)


def key_points(client: TestClient, card_id: str) -> list[str]:
    with Session(client.app.state.engine) as session:  # type: ignore[attr-defined]
        card = session.get(Card, card_id)
        assert card is not None
        return list(card.data["key_points"])


def test_the_suggest_endpoint_says_which_points_and_how(client: TestClient) -> None:
    response = client.post("/api/key-points/suggest", json={"card_id": CARD, "text": PARAPHRASE})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["card_id"] == CARD and body["method"] == "semantic"
    assert body["points"] == [3]
    assert len(body["scores"]) == len(key_points(client, CARD))


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({"card_id": "no-such-card", "text": "keys"}, 404),
        ({"card_id": "../etc", "text": "keys"}, 422),
        ({"card_id": CARD, "text": "x" * 8001}, 422),
        ({"card_id": CARD}, 422),
        ({"card_id": CARD, "text": ["a list"]}, 422),
    ],
)
def test_bad_suggest_requests_are_refused(client: TestClient, body: dict, status: int) -> None:
    response = client.post("/api/key-points/suggest", json=body)
    assert response.status_code == status, response.text


def test_an_empty_answer_gets_no_suggestion(client: TestClient) -> None:
    body = client.post("/api/key-points/suggest", json={"card_id": CARD, "text": "  "}).json()
    assert body["points"] == []


def _recall_quiz(client: TestClient) -> tuple[dict, dict]:
    quiz = start_quiz(client, topics=["kv-cache-contents"], size=3, kinds=["recall"])
    return quiz, quiz["items"][0]


def test_a_quiz_recall_answer_comes_back_with_its_suggestion(client: TestClient) -> None:
    quiz, item = _recall_quiz(client)
    point = key_points(client, item["card_id"])[1]
    base = f"/api/quizzes/{quiz['id']}/items/{item['position']}"
    view = client.post(base + "/answer", json={"answer": point}).json()
    suggested = view["suggested"]
    assert 1 in suggested["points"] and suggested["method"] == "semantic"
    # The user's ticks are what is rated; the suggestion stays beside them.
    rated = client.post(base + "/rate", json={"rating": "good", "key_points": [0]}).json()
    assert rated["response"]["key_points"] == [0] and rated["suggested"] == suggested


def test_the_revealed_quiz_page_pre_ticks_the_suggested_points(client: TestClient) -> None:
    signup(client, "kp@example.com")
    token = csrf(client, "/quiz")
    quiz, item = _recall_quiz(client)
    point = key_points(client, item["card_id"])[0]
    action = f"/quiz/{quiz['id']}/items/{item['position']}"
    client.post(action + "/answer", data={"csrf_token": token, "answer": point})
    page = client.get(action).text
    assert "seems to cover" in page and 'class="badge suggested"' in page
    boxes = re.findall(r'<input type="checkbox" name="key_points" value="(\d+)"\s*(checked)?', page)
    assert ("0", "checked") in boxes
    # A typed answer that covers nothing says so, and nothing is pre-ticked.
    second = quiz["items"][1]
    action = f"/quiz/{quiz['id']}/items/{second['position']}"
    client.post(action + "/answer", data={"csrf_token": token, "answer": "pasta for dinner, then a walk"})
    page = client.get(action).text
    assert "did not clearly cover any key point" in page and " checked" not in page


def test_a_quiz_answer_left_empty_has_no_suggestion(client: TestClient) -> None:
    quiz, item = _recall_quiz(client)
    view = client.post(f"/api/quizzes/{quiz['id']}/items/0/answer", json={"answer": ""}).json()
    assert view["suggested"] is None


def _mock_items(client: TestClient, mock_id: int) -> dict[int, MockItem]:
    with Session(client.app.state.engine) as session:  # type: ignore[attr-defined]
        rows = session.exec(select(MockItem).where(MockItem.interview_id == mock_id)).all()
        return {i.position: i for i in rows}


def test_a_mock_report_shows_what_was_suggested_and_what_was_confirmed(client: TestClient) -> None:
    signup(client, "mock-kp@example.com")
    token = csrf(client, "/mock")
    state = client.post("/api/mock", json={"minutes": 9, "topics": ["kv-cache-contents"],
                                               "with_challenge": False}).json()  # fmt: skip
    mock_id = state["id"]
    answered: dict[int, list[str]] = {}
    while state["current"]:
        current = state["current"]
        body: dict[str, object] = {"position": current["position"], "step": current["step"], "text": ""}
        if current["step"] == "question" and current["kind"] == "recall":
            item = _mock_items(client, mock_id)[current["position"]]
            points = key_points(client, str(item.card_id))
            answered[current["position"]] = points
            body["text"] = f"{points[0]} {points[2]}"
        elif current["step"] == "question" and current["kind"] == "numeric":
            body |= {"value": "1", "unit": current["numeric"]["unit"]}
        elif current["step"] == "question" and current["kind"] == "choice":
            body["picked"] = [0]
        state = client.post(f"/api/mock/{mock_id}/answers", json=body).json()
    assert answered, "the interview had no spoken question"
    position = min(answered)
    stored = _mock_items(client, mock_id)[position].suggested
    assert stored is not None and {0, 2} <= set(stored["points"]) and stored["method"] == "semantic"

    # The scoring page pre-ticks the suggestions, marked as such.
    page = client.get(f"/mock/{mock_id}").text
    assert "Score your answers" in page and 'class="badge suggested"' in page
    assert re.search(rf'name="kp-{position}" value="0"\s+checked', page)

    # The user unticks one suggestion and adds another point.
    confirmed = [0, 1]
    client.post(
        f"/mock/{mock_id}/score", data={"csrf_token": token, f"kp-{position}": [str(i) for i in confirmed]}
    )
    report = client.get(f"/api/mock/{mock_id}/report").json()
    row = next(i for i in report["items"] if i["position"] == position)
    assert row["covered"] == confirmed and row["suggested"] == stored["points"]
    assert row["suggested_by"] == "semantic"
    html = client.get(f"/mock/{mock_id}").text
    assert "suggested by the matcher" in html and "you confirmed" in html and "you unticked it" in html
    assert f"Suggested by the matcher: {len(stored['points'])} of {len(answered[position])}" in html


def test_a_mock_answer_from_before_suggestions_still_reports(client: TestClient) -> None:
    """Rows written before the column existed have no suggestion: the report shows only the ticks."""
    state = client.post("/api/mock", json={"minutes": 9, "topics": ["kv-cache-contents"],
                                               "with_challenge": False}).json()  # fmt: skip
    mock_id = state["id"]
    while state["current"]:
        current = state["current"]
        body: dict[str, object] = {"position": current["position"], "step": current["step"], "text": "keys"}
        if current["step"] == "question" and current["kind"] == "numeric":
            body |= {"value": "1", "unit": current["numeric"]["unit"]}
        if current["step"] == "question" and current["kind"] == "choice":
            body["picked"] = [0]
        state = client.post(f"/api/mock/{mock_id}/answers", json=body).json()
    with Session(client.app.state.engine) as session:  # type: ignore[attr-defined]
        for item in session.exec(select(MockItem).where(MockItem.interview_id == mock_id)).all():
            item.suggested = None
            session.add(item)
        session.commit()
    scored = client.post(f"/api/mock/{mock_id}/score", json={"items": []})
    assert scored.status_code == 200, scored.text
    assert all(i["suggested"] is None for i in scored.json()["items"])
    html = client.get(f"/mock/{mock_id}").text
    assert "Your report" in html and "suggested by the matcher" not in html

"""Scoring a mock interview schedules a card for review only with the user's consent: the score
page's "Schedule this card for review" box (unticked by default) and the API's `review` field
(false unless sent). What a user sees is their progress page's review history."""

from __future__ import annotations

from fastapi.testclient import TestClient

from app.services.clock import ManualClock
from tests.routes.test_mock import reply, start
from tests.services.factories import BODYLESS, csrf


def answered(client: TestClient, clock: ManualClock) -> dict:
    """A two-question interview, every step answered weakly, the clock stopped."""
    state = start(client, topics=["rope"], minutes=9)
    while state["current"]:
        clock.advance(10)
        state = reply(client, state, "something vague")
    return state


def mock_reviews(client: TestClient) -> list[str]:
    return [
        row["card_id"] for row in client.get("/api/progress").json()["history"] if row["source"] == "mock"
    ]


def test_the_score_form_schedules_only_the_ticked_card(app_client: TestClient, clock: ManualClock) -> None:
    state = answered(app_client, clock)
    url = f"/mock/{state['id']}"
    page = app_client.get(url).text
    assert page.count('type="checkbox" name="review-') == 2  # one per question, none ticked
    assert 'name="review-0" value="1">' in page and 'name="review-1" value="1">' in page
    token = csrf(app_client, url)
    assert app_client.post(url + "/score", data={"csrf_token": token, "review-1": "1"}).status_code == 200
    report = app_client.get(f"/api/mock/{state['id']}/report").json()
    first, second = (item["card_id"] for item in report["items"])
    assert mock_reviews(app_client) == [second]
    by_card = {r["target"]: r for r in report["review"]}
    assert by_card[first]["due_after"] is None and by_card[first]["rating"] is None
    assert by_card[second]["due_after"] is not None
    assert "not scheduled for review" in app_client.get(url).text


def test_the_api_schedules_a_card_only_when_review_is_sent(
    app_client: TestClient, clock: ManualClock
) -> None:
    state = answered(app_client, clock)
    body = {"items": [{"position": 0, "key_points": [0]}, {"position": 1, "review": True}]}
    scored = app_client.post(f"/api/mock/{state['id']}/score", json=body)
    assert scored.status_code == 200, scored.text
    first, second = (item["card_id"] for item in scored.json()["items"])
    assert mock_reviews(app_client) == [second]
    assert first != second
    refused = app_client.post(
        f"/api/mock/{state['id']}/score", json={"items": [{"position": 0, "review": "yes"}]}
    )
    assert refused.status_code == 422  # a boolean, not a truthy string


def test_the_review_field_is_documented(app_client: TestClient) -> None:
    document = app_client.get("/openapi.json", headers=BODYLESS).json()
    mark = document["components"]["schemas"]["MockMark"]["properties"]["review"]
    assert (
        mark["type"] == "boolean" and mark["default"] is False and "false unless sent" in mark["description"]
    )
    operation = document["paths"]["/api/mock/{mock_id}/score"]["post"]
    assert "marked for review" in operation["summary"]

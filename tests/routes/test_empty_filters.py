"""Empty parameters mean "no filter" on every list, page and API alike, as a GET form sends them."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from app.config import Settings
from tests.services.factories import fast_settings


@pytest.fixture
def settings(db_url: str) -> Settings:
    return fast_settings(db_url)


def test_api_card_list_ignores_every_empty_filter(client: TestClient) -> None:
    everything = client.get("/api/cards").json()
    empty = client.get("/api/cards?q=&topic=&difficulty=&page=&page_size=")
    assert empty.status_code == 200, empty.text
    assert empty.json() == everything
    # One filter set, the others empty: only that filter applies.
    hard = client.get("/api/cards?q=&topic=&difficulty=hard").json()
    assert hard == client.get("/api/cards?difficulty=hard").json()
    assert hard["total"] >= 1 and {c["difficulty"] for c in hard["items"]} == {"hard"}
    gqa = client.get("/api/cards?q=GQA&topic=&difficulty=").json()
    assert gqa == client.get("/api/cards?q=GQA").json() and gqa["total"] >= 1
    topic = client.get("/api/cards?topic=mha-mqa-gqa&difficulty=&q=&page=2&page_size=").json()
    assert topic == client.get("/api/cards?topic=mha-mqa-gqa&page=2").json()
    # Bare names (`?topic`) and repeated ampersands are empty too.
    assert client.get("/api/cards?topic&&difficulty").json() == everything


def test_card_pages_ignore_empty_filters_and_the_pager_keeps_only_real_ones(client: TestClient) -> None:
    first = client.get("/cards?q=&topic=&difficulty=")
    assert first.status_code == 200, first.text
    assert 'href="/cards?page=2"' in first.text  # the pager's links carry no empty parameters
    second = client.get("/cards?page=2&q=&topic=&difficulty=")
    assert second.status_code == 200 and 'aria-current="page">2<' in second.text
    medium = client.get("/cards?q=&topic=&difficulty=medium")
    assert medium.status_code == 200
    if 'rel="next"' in medium.text:
        assert 'href="/cards?difficulty=medium&amp;page=2"' in medium.text


def test_an_unknown_value_is_still_refused_with_the_schema_shape(client: TestClient) -> None:
    unknown = client.get("/api/cards?topic=no-such-topic")
    assert unknown.status_code == 422
    assert unknown.json()["detail"][0]["loc"] == ["query", "topic"]
    assert client.get("/api/cards?difficulty=impossible").status_code == 422


def test_other_pages_with_optional_parameters_take_them_empty(client: TestClient) -> None:
    assert client.get("/quiz?mode=").status_code == 200
    assert client.get("/auth/login?next=").status_code == 200
    assert client.get("/auth/signup?next=").status_code == 200


def test_json_setups_take_an_empty_difficulty_as_mixed(client: TestClient) -> None:
    quiz = client.post("/api/quizzes", json={"topics": ["kv-memory"], "size": 3, "difficulty": ""})
    assert quiz.status_code == 201, quiz.text
    assert quiz.json()["difficulty"] is None
    mock = client.post("/api/mock", json={"minutes": 15, "difficulty": "", "with_challenge": False})
    assert mock.status_code == 201, mock.text

"""The Anki buttons: /cards exports the list as filtered, /progress the visitor's due cards."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from app.config import Settings
from app.main import create_app
from app.services.clock import ManualClock
from tests.services.apkg import read_apkg
from tests.services.factories import fast_settings, finish_quiz, signup, start_quiz


@pytest.fixture
def settings(db_url: str) -> Settings:
    # No new cards of the day: a due export holds exactly the cards due.
    return fast_settings(db_url, new_cards_per_day=0)


@pytest.fixture
def client(settings: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(settings)) as test_client:
        test_client.app.state.clock = ManualClock(ticking=True)  # type: ignore[attr-defined]
        yield test_client


def _export_link(page: str) -> str:
    match = re.search(r'<a class="[^"]*anki-export[^"]*" href="([^"]+)" download>', page)
    assert match, "no Anki export link on the page"
    return match.group(1).replace("&amp;", "&")


def test_the_cards_page_exports_the_list_as_filtered(client: TestClient) -> None:
    listed = client.get("/cards", params={"topic": "kv-memory", "difficulty": "medium", "q": "cache"})
    href = _export_link(listed.text)
    assert href == "/api/export/anki?topic=kv-memory&difficulty=medium"
    response = client.get(href)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/apkg"
    assert response.headers["content-disposition"].startswith(
        'attachment; filename="kvprep-kv-memory-medium-'
    )
    every = client.get("/api/cards", params={"topic": "kv-memory", "difficulty": "medium", "page_size": 100})
    expected = {c["id"] for c in every.json()["items"]}
    notes = read_apkg(response.content).notes
    assert {n.fields["Card"] for n in notes} == expected
    assert int(response.headers["x-kvprep-notes"]) == len(expected) > 0
    assert all("kvprep::topic::kv-memory" in n.tags and "kvprep::difficulty::medium" in n.tags for n in notes)


def test_the_unfiltered_list_exports_every_card(client: TestClient) -> None:
    href = _export_link(client.get("/cards").text)
    assert href == "/api/export/anki"
    total = client.get("/api/cards").json()["total"]
    assert len(read_apkg(client.get(href).content).notes) == total


def test_the_progress_page_exports_the_visitors_due_cards(client: TestClient) -> None:
    signup(client, "anki@example.com")
    href = _export_link(client.get("/progress").text)
    assert href == "/api/export/anki?due=true"
    nothing = client.get(href)
    assert nothing.status_code == 409  # the visitor's data decides, not the request
    assert "nothing to export" in nothing.json()["detail"]
    finish_quiz(client, start_quiz(client), rating="again")
    client.app.state.clock.advance(3600)  # type: ignore[attr-defined]
    due_now = client.get("/api/progress").json()["due"]["now"]
    assert due_now > 0
    response = client.get(href)
    assert response.status_code == 200, response.text
    assert response.headers["content-disposition"].startswith('attachment; filename="kvprep-due-')
    assert response.headers["cache-control"] == "no-store"
    assert len(read_apkg(response.content).notes) == due_now
    # Another visitor's due cards are their own (none).
    assert TestClient(client.app).get(href).status_code == 409


def test_an_unknown_topic_is_refused(client: TestClient) -> None:
    response = client.get("/api/export/anki", params={"topic": "no-such-topic"})
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["query", "topic"]

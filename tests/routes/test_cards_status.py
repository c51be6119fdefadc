"""The card list shows each visitor their own status per card: new, due, learning or learned.

Personal, so never in the cache shared between guests: a guest with no reviews gets the kept
page (every card "new"), everyone else a page of their own.
"""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

from app.config import Settings
from app.services.clock import ManualClock
from tests.services.factories import fast_settings, finish_quiz, other_client, signup, start_quiz


@pytest.fixture
def settings(db_url: str) -> Settings:
    return fast_settings(db_url)


def statuses(client: TestClient, query: str = "topic=rope") -> dict[str, str]:
    page = client.get(f"/cards?{query}")
    assert page.status_code == 200
    items = re.findall(r'href="/cards/([a-z0-9-]+)\?[^"]*">.*?class="card-status (\w+)"', page.text, re.S)
    assert items, "no card with a status"
    return dict(items)


def test_new_then_learning_then_due_for_the_visitor_who_reviewed(client: TestClient) -> None:
    clock = client.app.state.clock = ManualClock(ticking=True)  # type: ignore[attr-defined]
    before = statuses(client)
    assert set(before.values()) == {"new"}
    quiz = start_quiz(client, topics=["rope"], size=2, kinds=["recall"])
    reviewed = {i["card_id"] for i in quiz["items"]}
    finish_quiz(client, quiz, rating="again")  # back in a minute: learning, not due yet
    after = statuses(client)
    assert {after[c] for c in reviewed} == {"learning"}
    assert {s for c, s in after.items() if c not in reviewed} == {"new"}
    clock.advance(90)
    assert {statuses(client)[c] for c in reviewed} == {"due"}


def test_easy_is_learned_until_its_due_date(client: TestClient) -> None:
    clock = client.app.state.clock = ManualClock(ticking=True)  # type: ignore[attr-defined]
    quiz = start_quiz(client, topics=["rope"], size=1, kinds=["recall"])
    card = quiz["items"][0]["card_id"]
    finish_quiz(client, quiz, rating="easy")
    page = client.get("/cards?topic=rope").text
    assert statuses(client)[card] == "learned"
    assert re.search(r'class="card-status learned" title="Next review \d{4}-\d\d-\d\d \d\d:\d\d UTC"', page)
    clock.advance(60 * 86400)
    assert statuses(client)[card] == "due"


def test_one_visitors_status_never_reaches_another(client: TestClient) -> None:
    client.app.state.clock = ManualClock(ticking=True)  # type: ignore[attr-defined]
    fresh = other_client(client)
    assert set(statuses(fresh).values()) == {"new"}  # kept now for every guest without reviews
    quiz = start_quiz(client, topics=["rope"], size=2, kinds=["recall"])
    finish_quiz(client, quiz, rating="easy")
    mine = statuses(client)
    assert list(mine.values()).count("learned") == 2
    # The fresh guest still gets the kept page, with nothing of the other's; and back again.
    assert set(statuses(fresh).values()) == {"new"}
    assert statuses(client) == mine
    # A signed-in account sees its own (nothing yet), not the guest's.
    account = other_client(client)
    signup(account, "status@example.com")
    assert set(statuses(account).values()) == {"new"}


def test_every_filter_and_page_shows_statuses(client: TestClient) -> None:
    for query in ("", "page=2", "q=memory", "difficulty=hard"):
        assert statuses(client, query), query
    assert "card-status" not in client.get("/cards?q=zzzz-nothing").text


def test_a_search_cannot_forge_a_status_slot(client: TestClient) -> None:
    # The slots are marked with NUL characters, which no query may carry.
    page = client.get("/cards", params={"q": "cache \x00status:what-the-cache-stores\x00"})
    assert page.status_code == 422 and "\x00" not in page.text

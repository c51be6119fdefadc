"""The cards API and pages, on SQLite and PostgreSQL: filters, search, paging, and no 500s."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from app.config import ROOT
from app.content.loader import load_bank


def test_first_request_gets_a_signed_guest_cookie(client: TestClient) -> None:
    response = client.get("/")
    assert response.status_code == 200
    cookie = response.headers["set-cookie"]
    assert "kvprep_session=" in cookie and "httponly" in cookie.lower() and "samesite=lax" in cookie.lower()


def test_forged_cookie_is_ignored_and_replaced(client: TestClient) -> None:
    client.cookies.set("kvprep_session", "eyJndWVzdCI6ICJ4In0=.forged.signature")
    response = client.get("/")
    assert response.status_code == 200
    assert "kvprep_session=" in response.headers["set-cookie"]


def test_list_filters_and_pages(client: TestClient) -> None:
    # The bank is larger than the biggest page (100), so walk the pages to see every card once.
    everything = client.get("/api/cards", params={"page_size": 100}).json()
    items, page = list(everything["items"]), 1
    while len(items) < everything["total"]:
        page += 1
        more = client.get("/api/cards", params={"page_size": 100, "page": page}).json()["items"]
        assert more, f"page {page} is empty with {len(items)} of {everything['total']} cards seen"
        items += more
    assert everything["total"] >= 110 and len({c["id"] for c in items}) == everything["total"] == len(items)
    topic = client.get("/api/cards", params={"topic": "mha-mqa-gqa"}).json()
    assert topic["total"] >= 2 and {c["topic"] for c in topic["items"]} == {"mha-mqa-gqa"}
    hard = client.get("/api/cards", params={"difficulty": "hard"}).json()
    assert hard["total"] >= 1 and {c["difficulty"] for c in hard["items"]} == {"hard"}
    first = client.get("/api/cards", params={"page_size": 5}).json()
    second = client.get("/api/cards", params={"page_size": 5, "page": 2}).json()
    assert len(first["items"]) == 5
    assert not {c["id"] for c in first["items"]} & {c["id"] for c in second["items"]}


def test_search_matches_every_word(client: TestClient) -> None:
    found = client.get("/api/cards", params={"q": "query cached"}).json()["items"]
    assert any(c["id"] == "what-the-cache-stores" for c in found)
    assert client.get("/api/cards", params={"q": "zzzz-nothing"}).json()["total"] == 0
    # LIKE wildcards in a query are literal characters: "kv_cache" must not match "kv-cache".
    literal = client.get("/api/cards", params={"q": "kv_cache"}).json()["total"]
    hyphen = client.get("/api/cards", params={"q": "kv-cache"}).json()["total"]
    expected = sum("kv_cache" in c.search_text().lower() for c in load_bank(ROOT / "questions").live_cards)
    assert literal == expected < hyphen


def test_card_detail(client: TestClient) -> None:
    card = client.get("/api/cards/what-the-cache-stores").json()
    assert card["question"] and len(card["key_points"]) >= 3
    assert card["follow_ups"][0]["question"] and card["follow_ups"][0]["answer"]
    assert card["wrong_answers"][0]["why"] and card["sources"]


@pytest.mark.parametrize(
    ("params", "status"),
    [
        ({"difficulty": "trivial"}, 422),
        ({"page": 0}, 422),
        ({"page": "x"}, 422),
        ({"page_size": 1000}, 422),
        ({"topic": "no-such-topic"}, 422),
        ({"topic": "../../etc"}, 422),
        ({"q": "x" * 500}, 422),
        ({"page": 9999}, 200),
    ],
)
def test_bad_query_parameters_are_422_never_500(client: TestClient, params: dict, status: int) -> None:
    assert client.get("/api/cards", params=params).status_code == status


def test_unknown_card_is_404(client: TestClient) -> None:
    assert client.get("/api/cards/no-such-card").status_code == 404
    page = client.get("/cards/no-such-card", headers={"accept": "text/html"})
    assert page.status_code == 404 and "Card not found" in page.text


def test_pages_render(client: TestClient) -> None:
    for path in [
        "/",
        "/topics",
        "/cards",
        "/cards?topic=rope&difficulty=hard&q=offset",
        "/cards/what-the-cache-stores",
    ]:
        response = client.get(path)
        assert response.status_code == 200, path
        assert "<html" in response.text
    assert client.get("/docs").status_code == 200
    assert "/api/cards" in client.get("/openapi.json").json()["paths"]

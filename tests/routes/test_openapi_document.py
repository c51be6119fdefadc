"""The OpenAPI document says what the server does (issue 21, item 7): each refusal a route answers is
declared, a 405 names every method of its path, and what the schema forbids the server refuses."""

from __future__ import annotations

from fastapi.testclient import TestClient

HEADERS = {"X-Requested-With": "test"}


def test_a_405_lists_every_method_routed_at_its_path(client: TestClient) -> None:
    # GET and DELETE /api/account are two routes: Starlette named only the first one's method.
    response = client.request("PATCH", "/api/account", headers=HEADERS)
    assert response.status_code == 405
    assert set(response.headers["allow"].split(", ")) == {"GET", "DELETE"}


def test_the_refusals_a_route_answers_are_in_its_document(client: TestClient) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    responses = paths["/api/cards/{card_id}"]["get"]["responses"]
    assert client.get("/api/cards/no-such-card").status_code == 404
    assert responses["404"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/Refusal"
    }
    # A POST with a body: not JSON (400), cross-site (403), too large (413), a new guest's limit (429).
    quiz = paths["/api/quizzes"]["post"]["responses"]
    assert {"400", "403", "413", "422", "429"} <= set(quiz)
    assert "Retry-After" in quiz["429"]["headers"]
    # A route that reads no visitor cannot answer a bad API token.
    assert "401" not in paths["/api/cards"]["get"]["responses"]


def test_a_date_as_a_number_is_refused_as_the_schema_says(client: TestClient) -> None:
    response = client.put("/api/account/settings", json={"interview_date": 0}, headers=HEADERS)
    assert response.status_code == 422, response.text
    accepted = client.put("/api/account/settings", json={"interview_date": "2027-01-04"}, headers=HEADERS)
    assert accepted.status_code == 200, accepted.text


def test_an_empty_topic_is_documented_as_no_filter(client: TestClient) -> None:
    topic = next(
        p
        for p in client.get("/openapi.json").json()["paths"]["/api/cards"]["get"]["parameters"]
        if p["name"] == "topic"
    )
    pattern = next(s["pattern"] for s in topic["schema"]["anyOf"] if "pattern" in s)
    assert pattern == "^([a-z0-9-]{1,80})?$"
    assert client.get("/api/cards?topic=").status_code == 200


def test_every_operation_has_a_readable_name(client: TestClient) -> None:
    """/docs names each operation by what it does (app/openapi.py SUMMARIES), never by its function
    ("Api List Cards"): a new route without a name fails here."""
    from app.openapi import SUMMARIES

    paths = client.get("/openapi.json").json()["paths"]
    operations = {(method, path): op for path, ops in paths.items() for method, op in ops.items()}
    unnamed = sorted(key for key in operations if key not in SUMMARIES)
    assert unnamed == []
    assert {op["summary"] for op in operations.values()} <= set(SUMMARIES.values())
    assert set(SUMMARIES) <= set(operations)  # no name for a route that is gone


def test_a_nul_in_a_browsers_address_is_a_page(client: TestClient) -> None:
    page = client.get("/cards/%00", headers={"accept": "text/html"})
    assert page.status_code == 422 and page.headers["content-type"].startswith("text/html")
    assert "NUL character" in page.text
    api = client.get("/api/cards/%00", headers={"accept": "text/html"})
    assert api.status_code == 422 and api.json()["detail"][0]["loc"] == ["path"]

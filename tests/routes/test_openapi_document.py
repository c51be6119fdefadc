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
    enum = next(s["enum"] for s in topic["schema"]["anyOf"] if "enum" in s)
    assert enum[0] == "" and "rope" in enum  # no filter, or one of the bank's topics
    assert client.get("/api/cards?topic=").status_code == 200
    assert client.get("/api/cards?topic=no-such-topic").status_code == 422


def test_the_topics_a_quiz_or_mock_may_name_are_the_banks(client: TestClient) -> None:
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    slugs = [t.slug for t in client.app.state.site.topics]  # type: ignore[attr-defined]
    for name in ("QuizCreate", "MockCreate"):
        assert sorted(schemas[name]["properties"]["topics"]["items"]["enum"]) == sorted(slugs)


def test_a_refusal_the_stored_data_decides_is_a_declared_409(client: TestClient) -> None:
    """No card matching valid choices, nothing due, too few reviews to fit: 409 with a sentence."""
    paths = client.get("/openapi.json").json()["paths"]
    for path, method in [
        ("/api/quizzes", "post"),
        ("/api/mock", "post"),
        ("/api/export/anki", "get"),
        ("/api/settings/scheduling/fit", "post"),
    ]:
        assert "409" in paths[path][method]["responses"], path
    refused = client.post(
        "/api/quizzes", json={"topics": ["rope"], "kinds": ["numeric"], "difficulty": "hard"}
    )
    assert refused.status_code == 409 and refused.json() == {"detail": "No card matches those choices."}


def test_the_calculators_menus_and_numbers_are_stated(client: TestClient) -> None:
    parameters = {
        p["name"]: p["schema"]
        for p in client.get("/openapi.json").json()["paths"]["/api/calculator"]["get"]["parameters"]
    }
    assert parameters["gpu"]["enum"] == ["", "a100_80gb", "h100_sxm", "h200_sxm"]
    assert "custom" in parameters["model"]["enum"]
    context = next(s for s in parameters["context"]["anyOf"] if s.get("type") == "integer")
    assert context["minimum"] == 1 and context["maximum"] == 10_000_000
    assert client.get("/api/calculator", params={"gpu": "tpu"}).status_code == 422
    assert client.get("/api/calculator", params={"context": "8,192"}).status_code == 422  # the page's text


def test_the_signup_schemas_email_pattern_agrees_with_the_server_on_unicode_spaces(
    client: TestClient,
) -> None:
    """\\s is ECMA's in the document, Rust's in pydantic and Python's in the service: the pattern
    spells the spaces out, so an address holding \\x85 or \\x1c is refused by all three alike."""
    pattern = client.get("/openapi.json").json()["components"]["schemas"]["SignupCredentials"]["properties"][
        "email"
    ]["pattern"]
    assert "\\s" not in pattern
    for odd in ("\x85", "\x1c", "\xa0", "\u3000"):
        response = client.post(
            "/api/auth/signup", json={"email": f"a{odd}b@example.com", "password": "x" * 12}
        )
        assert response.status_code == 422, odd
    assert (
        client.post(
            "/api/auth/signup", json={"email": " \x85a@example.com\u3000", "password": "x" * 12}
        ).status_code
        == 201
    )


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

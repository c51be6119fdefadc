"""Every JSON route documents its success response with a named model, so /docs shows its shape.

A route without `response_model=` still gets a schema from its return annotation, but only
`{"type": "object"}` for `dict[str, Any]` and nothing at all for a `JSONResponse`: this walks
the OpenAPI schema and wants a `$ref` to a component (or a list of them) in every 2xx answer
that has a body.
"""

from __future__ import annotations

from typing import Any

from app.config import Settings
from app.main import create_app

# Routes left out on purpose, each with its reason. Keep this short.
NOT_CHECKED: dict[str, str] = {
    "/api/export/anki": "a binary download (application/apkg, a zip), documented by its media type",
}


def _names_a_model(schema: dict[str, Any]) -> bool:
    if "$ref" in schema:
        return True
    if schema.get("type") == "array":
        return _names_a_model(schema.get("items", {}))
    return False


def untyped_responses(openapi: dict[str, Any]) -> list[str]:
    found = []
    for path, operations in openapi["paths"].items():
        if not path.startswith("/api") or path in NOT_CHECKED:
            continue
        for method, operation in operations.items():
            for status, response in operation.get("responses", {}).items():
                if not status.startswith("2") or status == "204":
                    continue
                content = response.get("content", {})
                schema = content.get("application/json", {}).get("schema", {})
                if not _names_a_model(schema):
                    found.append(f"{method.upper()} {path} {status}: {schema or 'no schema'}")
    return found


def test_every_json_route_has_a_response_model(settings: Settings) -> None:
    openapi = create_app(settings).openapi()
    assert untyped_responses(openapi) == []


def test_the_check_finds_an_untyped_route(settings: Settings) -> None:
    openapi = create_app(settings).openapi()
    operation = openapi["paths"]["/api/quizzes/{quiz_id}"]["get"]
    operation["responses"]["200"]["content"]["application/json"]["schema"] = {"type": "object"}
    assert untyped_responses(openapi) == ["GET /api/quizzes/{quiz_id} 200: {'type': 'object'}"]


def test_the_exclusions_are_routes_that_exist(settings: Settings) -> None:
    # A stale entry would hide nothing today and excuse a new route tomorrow.
    assert set(NOT_CHECKED) <= set(create_app(settings).openapi()["paths"])

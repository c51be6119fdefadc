"""The OpenAPI document says what the server does: FastAPI's, plus every refusal a route can answer.

FastAPI documents a route's success and its validation errors. The rest is added here, once per
app, from what decides it:

- the method: an unsafe one can be refused as cross-site (403), for a body over the size limit
  (413, app/middleware.py) or for a Content-Type that is not JSON (422, app/security.py);
- the body: one that is not JSON at all is 400 (FastAPI's own);
- the dependencies (DEPENDENCY_REFUSALS): a route that reads the visitor answers a bad API token
  (401), a token where tokens may not act (403) and too many bad tokens (429); one that creates a
  guest row, the per-address limit on new guests (429); a rate limiter, 429; a path's slug or
  interview id, 404;
- every route: a NUL in its path or query is a 422 (app/security.py).

Each refusal's body is app.routes.refusals.Refusal, each 422 its ValidationRefusal.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from typing import Any

from fastapi import FastAPI
from fastapi.dependencies.models import Dependant
from fastapi.routing import iter_route_contexts
from pydantic import BaseModel

from app.config import Settings
from app.deps import challenge_by_slug, current_user, find_user, submit_allowed, visitor
from app.routes.mock.views import own_mock
from app.routes.refusals import Refusal, ValidationRefusal, refusals
from app.services.errors import Forbidden, NotFound, ServiceError, TooLarge, TooManyRequests, Unauthorized

# What reading the visitor can refuse: an API token that matches no account (401, and 429 after
# too many from one address), a token on what only the signed-in browser may do (403).
_TOKEN = (Unauthorized, Forbidden, TooManyRequests)

DEPENDENCY_REFUSALS: dict[Callable[..., Any], tuple[type[ServiceError], ...]] = {
    find_user: _TOKEN,
    visitor: _TOKEN,
    current_user: (*_TOKEN, TooManyRequests),  # a new guest row: the per-address limit
    challenge_by_slug: (NotFound,),
    own_mock: (NotFound,),
    submit_allowed: (TooLarge, TooManyRequests),
}

UNSAFE_METHODS = frozenset({"post", "put", "patch", "delete"})

MALFORMED_BODY = {"description": "The body is not JSON", "model": Refusal}
CROSS_SITE = {"description": "A request from another site's page (its Origin is not this server's)"}
TOO_LARGE = {"description": "A body over the server's size limit"}


def _calls(dependant: Dependant) -> Iterator[Callable[..., Any]]:
    for sub in dependant.dependencies:
        if sub.call is not None:
            yield sub.call
        yield from _calls(sub)


def _dependency_kinds(dependant: Dependant) -> list[type[ServiceError]]:
    kinds: list[type[ServiceError]] = []
    for call in _calls(dependant):
        kinds.extend(DEPENDENCY_REFUSALS.get(call, ()))
        if getattr(call, "__name__", "").endswith("_limiter"):  # app.deps._limiter's dependencies
            kinds.append(TooManyRequests)
    return kinds


def _schema_ref(model: type[BaseModel], components: dict[str, Any]) -> dict[str, str]:
    """A $ref to `model` in the document's components, adding it (and what it refers to) if absent."""
    schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
    components.update(schema.pop("$defs", {}))
    components.setdefault(model.__name__, schema)
    return {"$ref": f"#/components/schemas/{model.__name__}"}


def _response(description: str, model: type[BaseModel], components: dict[str, Any]) -> dict[str, Any]:
    return {
        "description": description,
        "content": {"application/json": {"schema": _schema_ref(model, components)}},
    }


def _amend_operation(
    method: str, operation: dict[str, Any], dependant: Dependant, has_body: bool, components: dict[str, Any]
) -> None:
    responses: dict[str, Any] = operation.setdefault("responses", {})
    extra: dict[int | str, dict[str, Any]] = {}
    if method in UNSAFE_METHODS:
        extra[403] = {**CROSS_SITE, "model": Refusal}
        extra[413] = {**TOO_LARGE, "model": Refusal}
    if has_body:
        extra[400] = MALFORMED_BODY
    for status, entry in refusals(*_dependency_kinds(dependant)).items():
        if status in extra:  # two reasons for one status: both said
            extra[status] = {
                **entry,
                "description": f"{extra[status]['description']}; or: {entry['description']}",
            }
        else:
            extra[status] = entry
    for status, entry in extra.items():
        key = str(status)
        if key == "422":
            continue
        if key in responses:
            # Declared by the route itself: its description stands, its body is a Refusal.
            responses[key].setdefault("content", _response("", entry["model"], components)["content"])
        else:
            responses[key] = _response(entry["description"], entry["model"], components)
        if "headers" in entry:
            responses[key].setdefault("headers", entry["headers"])
    declared = responses.get("422", {})
    responses["422"] = _response(
        declared.get("description") or "A value sent cannot be used: `loc` says which, `msg` why",
        ValidationRefusal,
        components,
    )
    operation["responses"] = dict(sorted(responses.items()))


def _settings_bounds(components: dict[str, Any], settings: Settings) -> None:
    """Bounds a deployment's settings decide, as the services check them: a sign-up's password
    length (app/services/accounts.py), a quiz's size (app/services/quiz.py)."""
    password = components.get("SignupCredentials", {}).get("properties", {}).get("password")
    if password is not None:
        password.update(minLength=settings.password_min_length, maxLength=settings.password_max_length)
    size = components.get("QuizCreate", {}).get("properties", {}).get("size")
    if size is not None:
        size["maximum"] = settings.quiz_max_size


def _bank_topics(document: dict[str, Any], components: dict[str, Any], slugs: list[str]) -> None:
    """The topics of the bank this server loaded, where a request names one: a `topic` query
    ("" for no filter) and a quiz's or mock's `topics`. The routes refuse any other (422)."""
    for operations in document["paths"].values():
        for operation in operations.values():
            for parameter in operation.get("parameters", ()):
                if parameter["name"] == "topic" and parameter["in"] == "query":
                    parameter["schema"] = {
                        "anyOf": [{"type": "string", "enum": ["", *slugs]}, {"type": "null"}],
                        "description": "a topic's slug; empty or left out: every topic",
                    }
    for name in ("QuizCreate", "MockCreate"):
        topics = components.get(name, {}).get("properties", {}).get("topics")
        if topics is not None:
            topics["items"] = {"type": "string", "enum": slugs}


# What app/security.py and app/validation.py refuse in any text a request sends (422): a NUL.
NO_NUL = "^[^\\x00]*$"


def _refuse_nul(schema: Any) -> None:
    """Every free text of `schema` says it holds no NUL (one with a pattern or menu says more)."""
    if isinstance(schema, list):
        for item in schema:
            _refuse_nul(item)
    elif isinstance(schema, dict):
        if schema.get("type") == "string" and not {"pattern", "enum", "const", "format"} & set(schema):
            schema["pattern"] = NO_NUL
        for key, value in schema.items():
            if key not in ("examples", "default", "enum", "const"):
                _refuse_nul(value)


def _request_components(document: dict[str, Any], components: dict[str, Any]) -> set[str]:
    """The component schemas a request body refers to, and those they refer to."""
    found: set[str] = set()
    pending = [
        operation.get("requestBody", {})
        for operations in document["paths"].values()
        for operation in operations.values()
    ]
    while pending:
        text = str(pending.pop())
        for name in components:
            if f"#/components/schemas/{name}'" in text and name not in found:
                found.add(name)
                pending.append(components[name])
    return found


def _nul_free_requests(document: dict[str, Any], components: dict[str, Any]) -> None:
    for operations in document["paths"].values():
        for operation in operations.values():
            for parameter in operation.get("parameters", ()):
                _refuse_nul(parameter.get("schema"))
    for name in _request_components(document, components):
        _refuse_nul(components[name])


def amend(document: dict[str, Any], app: FastAPI) -> dict[str, Any]:
    components: dict[str, Any] = document.setdefault("components", {}).setdefault("schemas", {})
    _settings_bounds(components, app.state.settings)
    site = getattr(app.state, "site", None)  # loaded at start-up; absent before it
    if site is not None:
        _bank_topics(document, components, [topic.slug for topic in site.topics])
    _nul_free_requests(document, components)
    for route in iter_route_contexts(app.routes):
        dependant = getattr(route, "dependant", None)
        if dependant is None or not route.include_in_schema or route.path_format not in document["paths"]:
            continue
        for method in route.methods or ():
            operation = document["paths"][route.path_format].get(method.lower())
            if operation is not None:
                _amend_operation(
                    method.lower(), operation, dependant, route.body_field is not None, components
                )
    # FastAPI's own validation-error schemas, replaced by ValidationRefusal: what the handler sends.
    for name in ("HTTPValidationError", "ValidationError"):
        if name not in str(document["paths"]):
            components.pop(name, None)
    return document


def install(app: FastAPI) -> None:
    """`app.openapi()` (what /openapi.json serves) answers the amended document, built once the
    bank is loaded (before start-up, one without the bank's topics, not kept)."""
    plain = app.openapi
    built: dict[str, Any] = {}

    def openapi() -> dict[str, Any]:
        if not built:
            document = amend(copy.deepcopy(plain()), app)
            if getattr(app.state, "site", None) is None:
                return document
            built.update(document)
        return built

    app.openapi = openapi  # type: ignore[method-assign]

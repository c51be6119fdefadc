"""The refusals a route can answer, as its OpenAPI document states them.

A route names the ServiceError kinds its own code and its services raise with
``responses=refusals(NotFound, Conflict)``; what every route of a kind can answer (a body that is
not JSON, a request from another site, a guest row's rate limit, a bad API token) app/openapi.py
adds from the route's method, body and dependencies. Each kind answers its class's ``status``
(app/services/errors.py) with the JSON app/error_handlers.py writes: `Refusal`, or for a 422 the
validation-error list FastAPI documents.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field
from pydantic.json_schema import SkipJsonSchema

from app.services.errors import ServiceError, TooManyRequests


class Refusal(BaseModel):
    """Every refusal but a validation error: a sentence, and the form field or JSON key it is about."""

    detail: str = Field(description="What was refused, and how to get past it")
    field: str | SkipJsonSchema[None] = Field(
        None,
        description="The form field or JSON key the refusal is about; absent when it is the whole request",
    )


class ValidationProblem(BaseModel):
    loc: list[str | int]
    msg: str
    type: str


class ValidationRefusal(BaseModel):
    """A 422 for a value that cannot be used: where it is (`loc`) and why (`msg`)."""

    detail: list[ValidationProblem]
    field: str | SkipJsonSchema[None] = Field(None, description="The form field or JSON key it is about")


def describe(kind: type[ServiceError]) -> str:
    """The first paragraph of the kind's docstring: what a refusal of that status means."""
    paragraph = (kind.__doc__ or kind.__name__).strip().split("\n\n")[0]
    return " ".join(paragraph.split())


# Headers a refusal of that kind carries (the handler sends them).
RETRY_AFTER = {
    "Retry-After": {
        "description": "Seconds until the limit lets this request through",
        "schema": {"type": "integer", "minimum": 0},
    }
}


def refusals(*kinds: type[ServiceError]) -> dict[int | str, dict[str, Any]]:
    """The `responses=` of a route that can answer these kinds, one entry per status (each kind of
    that status said in its description: a 409 can be a Conflict or a NotReady)."""
    responses: dict[int | str, dict[str, Any]] = {}
    for kind in kinds:
        model = ValidationRefusal if kind.status == 422 else Refusal
        entry = responses.setdefault(kind.status, {"description": describe(kind), "model": model})
        if describe(kind) not in entry["description"]:
            entry["description"] = f"{entry['description']}; or: {describe(kind)}"
        if issubclass(kind, TooManyRequests):
            entry["headers"] = RETRY_AFTER
    return responses

"""One family for every refusal a request can get: what to say, which HTTP status, which form field.

Services and dependencies raise these kinds; routes never catch them to translate, and nothing
raises HTTPException. The one handler (`app.error_handlers`) answers ``{"detail": message, "field":
field}`` with the kind's ``status`` (a 422's detail a list of one validation error); a page that
posts a form shows the message beside the field it names (``None``: above the form).
"""

from __future__ import annotations

from collections.abc import Sequence


class ServiceError(Exception):
    """A refusal: `message` says how to get past it, `field` names the form field or JSON key it is
    about (None when it is about the whole request). Raise one of the kinds below, whose class
    says the HTTP status."""

    status = 400

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


class Unauthorized(ServiceError):
    """Credentials that do not match an account."""

    status = 401


class Forbidden(ServiceError):
    """The visitor is known, and this is not theirs to do (a wrong password, an expired form)."""

    status = 403


class NotFound(ServiceError):
    """The thing asked for does not exist, or is not this user's to see (the same answer on purpose:
    a stranger must not learn which ids exist)."""

    status = 404


class Conflict(ServiceError):
    """A request that does not fit the state of what it acts on (an interview already over, a
    question already answered, an email already taken)."""

    status = 409


class Gone(ServiceError):
    """The thing existed and its owner withdrew it (a revoked share link)."""

    status = 410


class TooLarge(ServiceError):
    """A body over a size limit."""

    status = 413


class NotReady(Conflict):
    """A well-formed request the data it reads cannot support now (too few reviews to fit, no card
    matching the filters, nothing due): 409, as any refusal decided by what is stored rather than
    by what was sent; the same request can succeed later, or on another server's bank."""


class InvalidInput(ServiceError):
    """A value the user typed or sent that cannot be used as it is.

    `loc` is where the API's validation error points (``["body"]`` unless given), as FastAPI's own
    validation errors do: ``["body", "input", "d"]`` for one parameter of a Run's custom input.
    """

    status = 422

    def __init__(self, message: str, field: str | None = None, *, loc: Sequence[str] = ("body",)) -> None:
        super().__init__(message, field)
        self.loc = list(loc)


class TooManyRequests(ServiceError):
    """A rate limit the user hit: `retry_after` seconds until it lets them through (the API sends it
    as the Retry-After header)."""

    status = 429

    def __init__(self, message: str, retry_after: int, field: str | None = None) -> None:
        super().__init__(message, field)
        self.retry_after = retry_after

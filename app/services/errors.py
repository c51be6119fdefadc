"""One family for every error a user can fix: what to say, which HTTP status, which form field.

Services raise these; routes never catch them to translate. The API's handler in `app.main`
answers ``{"detail": message, "field": field}`` with ``status``; a page that posts a form shows
the message beside the field it names (``None``: above the form).
"""

from __future__ import annotations


class ServiceError(Exception):
    """A request the user can fix: `message` says how, `status` is the HTTP status to answer with,
    `field` names the form field or JSON key it is about (None when it is about the whole request)."""

    default_status = 409

    def __init__(self, message: str, status: int | None = None, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = self.default_status if status is None else status
        self.field = field


class NotFound(ServiceError):
    """The thing asked for does not exist, or is not this user's to see (the same answer on purpose:
    a stranger must not learn which ids exist)."""

    default_status = 404


class InvalidInput(ServiceError):
    """A value the user typed or sent that cannot be used as it is."""

    default_status = 422


class TooManyRequests(ServiceError):
    """A rate limit the user hit: `retry_after` seconds until it lets them through (the API sends it
    as the Retry-After header)."""

    default_status = 429

    def __init__(self, message: str, retry_after: int, field: str | None = None) -> None:
        super().__init__(message, None, field)
        self.retry_after = retry_after

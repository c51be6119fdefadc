"""Pure-ASGI guards every response and every state-changing request passes through.

- SecurityHeaders adds the Content-Security-Policy and its companions to every response. The
  header list is built once at start-up: per response the cost is one pass over the headers the
  route already set (a route's own Referrer-Policy, such as the shared report's no-referrer, wins).
- RequestGuard refuses, before routing, what no page of ours sends: a state-changing request
  whose Origin is another site, a state-changing /api request that a form or a `no-cors` fetch
  could send (anything but application/json, unless it carries X-Requested-With, which only
  same-origin scripts can set), and NUL bytes in the path or query (PostgreSQL cannot store
  them; nothing legitimate contains them). Query parameters left empty, as a GET form leaves its
  untouched fields, are dropped: empty means "no filter" on every list, page and API alike.
"""

from __future__ import annotations

import html
import json

from starlette.types import ASGIApp, Message, Receive, Scope, Send

# Pages load scripts, styles and images only from /static; nothing inline, nothing from elsewhere.
# CodeMirror styles itself through constructed stylesheets and element.style, which this allows.
PAGE_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; "
    "connect-src 'self'; object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'"
)
HSTS = "max-age=63072000; includeSubDomains"

UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def _encode(pairs: list[tuple[str, str]]) -> list[tuple[bytes, bytes]]:
    return [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in pairs]


class SecurityHeaders:
    def __init__(self, app: ASGIApp, *, hsts: bool) -> None:
        self.app = app
        common = [
            ("X-Content-Type-Options", "nosniff"),
            ("Referrer-Policy", "strict-origin-when-cross-origin"),
            ("X-Frame-Options", "DENY"),  # frame-ancestors for browsers that predate CSP 2
            ("Cross-Origin-Opener-Policy", "same-origin"),
        ]
        if hsts:
            common.append(("Strict-Transport-Security", HSTS))
        self.page_headers = _encode([("Content-Security-Policy", PAGE_CSP), *common])

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        extra = self.page_headers

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers") or [])
                present = {name for name, _ in headers}
                headers.extend(pair for pair in extra if pair[0] not in present)
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, send_with_headers)


def _refuse(status: int, message: str, loc: list[str] | None = None) -> tuple[int, bytes]:
    """A JSON body in the shape of the OpenAPI schema: {"detail": str} or a validation error list."""
    detail: object = message if loc is None else [{"loc": loc, "msg": message, "type": "value_error"}]
    return status, json.dumps({"detail": detail}).encode()


NUL_IN_PATH = _refuse(422, "NUL characters are not allowed", ["path"])
NUL_IN_QUERY = _refuse(422, "NUL characters are not allowed", ["query"])
FOREIGN_ORIGIN = _refuse(403, "Cross-site request refused: this request came from another site")
# 422 like any malformed body (CONTRACT.md), in the validation-error shape the schema documents.
NOT_JSON = _refuse(
    422,
    "Send this request with Content-Type: application/json (or an X-Requested-With header)",
    ["header", "content-type"],
)


def _wants_a_page(scope: Scope) -> bool:
    """A browser asking for a page (as app/error_handlers.py decides): it gets a page, not JSON."""
    if scope["path"].startswith(("/api", "/static")):
        return False
    accept = next((v for n, v in scope["headers"] if n == b"accept"), b"")
    return b"text/html" in accept


def _refusal_page(status: int, body: bytes) -> bytes:
    """A plain page for a refusal made before the app runs (no session, so not the site's layout)."""
    detail = json.loads(body)["detail"]
    message = detail if isinstance(detail, str) else detail[0]["msg"]
    if message.startswith("NUL"):
        message = "This address holds a NUL character (%00), which no page of kvprep has: it cannot be read."
    page = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{status}</title></head><body><main><h1>This request was refused</h1>"
        f'<p class="error-detail">{html.escape(message)}</p>'
        '<p><a href="/">Back to the home page</a></p></main></body></html>'
    )
    return page.encode()


def _same_origin(origin: bytes, host: bytes | None, scheme: bytes) -> bool:
    """Origin is scheme://host[:port]; it must name the scheme and host the request was sent to
    (https://host and http://host are two origins: a page of one may not act on the other)."""
    origin_scheme, sep, netloc = origin.partition(b"://")
    return bool(sep) and host is not None and netloc == host and origin_scheme.lower() == scheme


class RequestGuard:
    def __init__(self, app: ASGIApp, *, trusted_origins: frozenset[bytes] = frozenset()) -> None:
        self.app = app
        # Origins accepted besides the request's own Host (a proxy that rewrites Host).
        self.trusted_origins = trusted_origins

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = self._check(scope)
        if refusal is not None:
            status, body = refusal
            kind = b"application/json"
            if _wants_a_page(scope):
                kind, body = b"text/html; charset=utf-8", _refusal_page(status, body)
            await send(
                {
                    "type": "http.response.start",
                    "status": status,
                    "headers": [
                        (b"content-type", kind),
                        (b"content-length", str(len(body)).encode()),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": body})
            return
        query = scope.get("query_string", b"")
        if query:
            parts = query.split(b"&")
            kept = [p for p in parts if p.partition(b"=")[2]]
            if len(kept) != len(parts):
                scope = {**scope, "query_string": b"&".join(kept)}
        await self.app(scope, receive, send)

    def _check(self, scope: Scope) -> tuple[int, bytes] | None:
        if "\x00" in scope["path"]:
            return NUL_IN_PATH
        query = scope.get("query_string", b"")
        if query and b"%00" in query:
            return NUL_IN_QUERY
        if scope["method"] not in UNSAFE_METHODS:
            return None
        origin = host = content_type = None
        requested_with = False
        for name, value in scope["headers"]:
            if name == b"origin":
                origin = value
            elif name == b"host":
                host = value
            elif name == b"content-type":
                content_type = value
            elif name == b"x-requested-with":
                requested_with = True
        if (
            origin is not None
            and not _same_origin(origin, host, str(scope.get("scheme", "http")).encode())
            and origin not in self.trusted_origins
        ):
            return FOREIGN_ORIGIN
        if scope["path"].startswith("/api/") and not requested_with:
            media_type = (content_type or b"").split(b";", 1)[0].strip().lower()
            if media_type != b"application/json":
                return NOT_JSON
        return None

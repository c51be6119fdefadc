"""The app's one translation of a refusal into a response: a page for a browser, JSON for the API.

Three sources: a ServiceError any service or dependency raised (the only kind the app's own code
raises), FastAPI's validation of a request, and Starlette's own HTTP errors (an unknown path, a
wrong method). The JSON is ``{"detail": ...}``: a sentence, or for a 422 a list of validation
errors as the OpenAPI schema documents, plus ``field`` when a ServiceError names one.
"""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from app.cookie_session import STATIC_PREFIX
from app.services.errors import InvalidInput, ServiceError, TooManyRequests, Unauthorized
from app.web import templates


def _wants_html(request: Request) -> bool:
    """A page's error is a page; /api and /static errors are plain (static requests carry no
    session, which the page's header reads)."""
    path = request.url.path
    return not path.startswith(("/api", STATIC_PREFIX)) and "text/html" in request.headers.get("accept", "")


def _error_page(request: Request, status: int, detail: str) -> Response:
    return templates.TemplateResponse(
        request, "errors/error.html", {"status": status, "detail": detail}, status_code=status
    )


def _validation_error(loc: list[str], message: str) -> list[dict[str, object]]:
    return [{"loc": loc, "msg": message, "type": "value_error"}]


# The methods a 405's Allow header may name: every one some route of the app serves.
ROUTED_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE")


def allowed_methods(request: Request) -> str:
    """Every method some route serves at this path, as a 405's Allow header lists them (RFC 9110).

    Starlette's own Allow names only the methods of the first route whose path matched, and a path
    is often served by several routes (GET /api/account and DELETE /api/account): each method is
    asked of every route, as the router would for a request sent with it.
    """
    routes = request.app.router.routes
    allowed = [
        method
        for method in ROUTED_METHODS
        if any(route.matches({**request.scope, "method": method})[0] is Match.FULL for route in routes)
    ]
    return ", ".join(allowed)


async def http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, StarletteHTTPException)
    headers = exc.headers
    if exc.status_code == 405:
        headers = {**(headers or {}), "Allow": allowed_methods(request)}
    if _wants_html(request):
        page = _error_page(request, exc.status_code, str(exc.detail))
        page.headers.update(headers or {})
        return page
    detail: object = exc.detail
    if exc.status_code == 422 and isinstance(detail, str):
        detail = _validation_error(["body"], detail)
    return JSONResponse({"detail": detail}, status_code=exc.status_code, headers=headers)


async def service_error(request: Request, exc: Exception) -> Response:
    """Routes let a ServiceError through and never catch it to re-raise; its kind is its status."""
    assert isinstance(exc, ServiceError)
    if _wants_html(request):
        return _error_page(request, exc.status, exc.message)
    detail: object = _validation_error(exc.loc, exc.message) if isinstance(exc, InvalidInput) else exc.message
    body: dict[str, object] = {"detail": detail}
    if exc.field is not None:
        body["field"] = exc.field
    headers = {"Retry-After": str(exc.retry_after)} if isinstance(exc, TooManyRequests) else None
    if isinstance(exc, Unauthorized) and exc.field == "authorization":  # a bad API token (RFC 6750)
        headers = {"WWW-Authenticate": 'Bearer error="invalid_token"'}
    return JSONResponse(body, status_code=exc.status, headers=headers)


async def validation_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    if _wants_html(request):
        problems = "; ".join(f"{'.'.join(map(str, e['loc'][1:]))}: {e['msg']}" for e in exc.errors())
        return _error_page(request, 422, problems)
    errors = [{k: e[k] for k in ("loc", "msg", "type") if k in e} for e in exc.errors()]
    return JSONResponse({"detail": errors}, status_code=422)


def add_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(StarletteHTTPException, http_error)
    app.add_exception_handler(ServiceError, service_error)
    app.add_exception_handler(RequestValidationError, validation_error)

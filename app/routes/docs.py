"""The API's interactive docs and the site icon, both served from here, nothing from a CDN.

FastAPI's own /docs page loads Swagger UI from jsDelivr with an inline script: blank offline, and
against our Content-Security-Policy. This page loads the swagger-ui-dist npm package, bundled into
static/dist by esbuild (static/src/docs.js), so the page policy applies unchanged.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, HTMLResponse

from app.config import ROOT
from app.web import templates

pages = APIRouter(tags=["pages"], include_in_schema=False)

FAVICON = ROOT / "static" / "favicon.svg"


@pages.get("/docs", response_class=HTMLResponse)
def swagger_page(request: Request) -> HTMLResponse:
    openapi_url = request.app.openapi_url or "/openapi.json"
    return templates.TemplateResponse(request, "docs/swagger.html", {"openapi_url": openapi_url})


@pages.get("/favicon.ico")
def favicon() -> FileResponse:
    """For clients that ask at the conventional address; pages name /static/favicon.svg."""
    return FileResponse(
        FAVICON, media_type="image/svg+xml", headers={"Cache-Control": "public, max-age=86400"}
    )

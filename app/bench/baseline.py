"""The bare Starlette hello page every page figure is compared with (served by uvicorn like ours)."""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route


async def hello(request: Request) -> HTMLResponse:
    return HTMLResponse("<!doctype html><title>hello</title><p>Hello, world</p>")


app = Starlette(routes=[Route("/", hello)])

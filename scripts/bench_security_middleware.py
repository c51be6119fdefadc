#!/usr/bin/env python3
"""Run: .venv/bin/python scripts/bench_security_middleware.py

Per-request cost of RequestGuard + SecurityHeaders around a trivial ASGI app (median of 5 runs)."""

import asyncio
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.security import RequestGuard, SecurityHeaders  # noqa: E402


async def app(scope, receive, send):
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"text/html"), (b"content-length", b"2")],
        }
    )
    await send({"type": "http.response.body", "body": b"ok"})


async def receive():
    return {"type": "http.request", "body": b""}


async def send(message):
    pass


def scope(qs=b"q=GQA&topic=&difficulty="):
    return {
        "type": "http",
        "method": "GET",
        "path": "/cards",
        "query_string": qs,
        "headers": [(b"host", b"127.0.0.1:8000"), (b"accept", b"text/html"), (b"user-agent", b"wrk")],
    }


async def run(target, n=100_000):
    s = scope()
    t = time.perf_counter()
    for _ in range(n):
        await target(s, receive, send)
    return (time.perf_counter() - t) / n * 1e6


wrapped = SecurityHeaders(RequestGuard(app), hsts=True)
bare, full = [], []
for _ in range(5):
    bare.append(asyncio.run(run(app)))
    full.append(asyncio.run(run(wrapped)))
b, f = statistics.median(bare), statistics.median(full)
print(f"bare app {b:.2f} us/request; with both middlewares {f:.2f} us; added {f - b:.2f} us")

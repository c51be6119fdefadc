"""A request the HTTP server cannot read gets the 400 the OpenAPI document declares (issue 21).

uvicorn's parser refuses a request line past 64 KiB before the app sees it, with a plain-text
400; schemathesis through ASGI never meets it, so a real server in a thread is asked here.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from app.config import ROOT, Settings
from app.db import migrate
from app.main import create_app
from tests.browser.conftest import serve_in_thread

LONG = "a" * 70_000  # past the request line's 64 KiB


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int, dict]]:  # type: ignore[type-arg]
    url = f"sqlite:///{tmp_path_factory.mktemp('unreadable') / 'kvprep.sqlite3'}"
    migrate(url)
    app = create_app(Settings(database_url=url, content_root=ROOT / "questions", grading_workers=0))
    with serve_in_thread(app, "the test server") as base:
        host, port = base.removeprefix("http://").split(":")
        yield host, int(port), app.openapi()


def raw_get(host: str, port: int, target: str) -> tuple[int, str, str]:
    """(status, content-type, body) of one GET sent as bytes (httpx refuses a URL this long)."""
    with socket.create_connection((host, port), timeout=10) as conn:
        conn.sendall(f"GET {target} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
        data = b""
        while chunk := conn.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines[1:])
    return int(lines[0].split()[1]), headers.get("content-type", ""), body.decode()


@pytest.mark.parametrize("target", [f"/api/cards/{LONG}", f"/api/calculator?model={LONG}", f"/{LONG}"])
def test_a_request_line_over_64_kib_is_a_plain_400(server: tuple[str, int, dict], target: str) -> None:  # type: ignore[type-arg]
    host, port, _ = server
    status, content_type, body = raw_get(host, port, target)
    assert (status, content_type.split(";")[0], body) == (400, "text/plain", "Invalid HTTP request received.")
    # Under the limit the app answers as usual: the 400 is the server's, not a route's.
    assert raw_get(host, port, "/api/cards/" + "a" * 60_000)[0] == 404


def test_every_operation_declares_that_400_as_plain_text(server: tuple[str, int, dict]) -> None:  # type: ignore[type-arg]
    paths = server[2]["paths"]
    for path, operations in paths.items():
        for method, operation in operations.items():
            declared = operation["responses"].get("400")
            assert declared and "over 64 KiB" in declared["description"], (method, path)
            assert declared["content"]["text/plain"] == {"schema": {"type": "string"}}, (method, path)
    # A route that reads a JSON body keeps its own 400 as well: both reasons said, both bodies.
    quiz = paths["/api/quizzes"]["post"]["responses"]["400"]
    assert quiz["description"].startswith("The body is not JSON; or: ")
    assert "application/json" in quiz["content"]

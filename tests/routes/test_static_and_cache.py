"""Static files under hashed names with long-lived caching; guest pages kept, personal ones never."""

from __future__ import annotations

import hashlib
import re

from fastapi.testclient import TestClient

from app.config import ROOT
from tests.services.factories import signup, start_quiz


def test_pages_link_hashed_static_files_cached_for_a_year(client: TestClient) -> None:
    page = client.get("/challenges/decode-step").text
    links = re.findall(r'(?:href|src)="(/static/[^"]+)"', page)
    assert {re.sub(r"\.[0-9a-f]{12}\.", ".", link) for link in links} >= {
        "/static/css/app.css",
        "/static/dist/editor.js",
        "/static/js/verdict.js",
        "/static/js/challenge.js",
    }
    for link in links:
        plain = re.sub(r"\.([0-9a-f]{12})\.", ".", link).removeprefix("/static/")
        content = (ROOT / "static" / plain).read_bytes()
        assert hashlib.sha256(content).hexdigest()[:12] in link
        response = client.get(link)
        assert response.status_code == 200 and response.content == content
        assert response.headers["cache-control"] == "public, max-age=31536000, immutable"
        assert "set-cookie" not in response.headers  # no session work for a static file


def test_plain_and_stale_static_names_are_revalidated(client: TestClient) -> None:
    plain = client.get("/static/css/app.css")
    assert plain.status_code == 200 and plain.headers["cache-control"] == "no-cache"
    stale = client.get("/static/css/app.000000000000.css")
    assert stale.status_code == 200 and stale.headers["cache-control"] == "no-cache"
    assert stale.content == plain.content
    assert client.get("/static/css/nothing.0123456789ab.css").status_code == 404


def test_a_kept_guest_page_gives_every_visitor_their_own_csrf_token(client: TestClient) -> None:
    tokens = []
    for _ in range(3):
        client.cookies.clear()
        page = client.get("/quiz").text
        tokens += re.findall(r'name="csrf_token" value="([^"]+)"', page)
    assert len(tokens) == 3 and len(set(tokens)) == 3
    # The token served from the kept page is the session's own: the form works.
    form = {"csrf_token": tokens[-1], "kinds": "recall", "size": "1"}
    response = client.post("/quiz", data=form, follow_redirects=False)
    assert response.status_code == 303


def test_personal_pages_are_never_shared(client: TestClient) -> None:
    stranger_home = client.get("/").text
    client.cookies.clear()
    start_quiz(client, topics=["kv-memory"], size=2)
    # This guest now has a row: its quiz page lists its quiz, unlike the kept page of a new guest.
    mine = client.get("/quiz").text
    assert "Your recent quizzes" in mine
    client.cookies.clear()
    assert "Your recent quizzes" not in client.get("/quiz").text
    # A signed-in visitor's header is theirs, on a page guests share.
    email = "reader@example.com"
    signup(client, email)
    for path in ["/cards/what-the-cache-stores", "/topics", "/cards", "/"]:
        page = client.get(path).text
        assert email in page and "Log out" in page
    client.cookies.clear()
    for path in ["/cards/what-the-cache-stores", "/topics", "/cards", "/"]:
        assert email not in client.get(path).text
    assert "Log in" in stranger_home

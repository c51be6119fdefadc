"""Pages shared by every visitor (a card, the topics) served from memory to signed-in visitors too.

The kept page is one document with the header's account links swapped per visitor: a signed-in
visitor sees their own email and CSRF token, never another's, and a guest never sees an account.
And the session check that pages and writes make still ends a session on every server at once.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from app.config import Settings
from app.main import create_app
from tests.services.factories import BODYLESS, fast_settings, login, other_client, signup

CARD = "/cards/what-the-cache-stores"


@pytest.fixture
def settings(db_url: str) -> Settings:
    return fast_settings(db_url)


def header(page: str) -> str:
    """The header's account links of a page."""
    match = re.search(r'<nav class="account-nav".*?</nav>', page, re.S)
    assert match, "no account links in the header"
    return match.group(0)


def tokens(page: str) -> set[str]:
    return set(re.findall(r'name="csrf_token" value="([^"]+)"', page))


@pytest.mark.parametrize("path", [CARD, "/topics"])
def test_each_visitor_gets_their_own_header_on_a_kept_page(client: TestClient, path: str) -> None:
    ann, bob, guest = client, other_client(client), other_client(client)
    signup(ann, "ann@example.com")
    signup(bob, "bob@example.com")
    first = ann.get(path).text  # rendered for Ann, kept for everyone
    assert "ann@example.com" in header(first) and "Log out" in header(first)
    for _ in range(2):  # the second time from the kept page, before any route runs
        seen = guest.get(path).text
        assert "@example.com" not in seen and "Log in" in header(seen) and "Log out" not in seen
        assert not tokens(seen) & tokens(first)
        bobs = bob.get(path).text
        assert "bob@example.com" in header(bobs) and "ann@example.com" not in bobs
        assert tokens(bobs) and not tokens(bobs) & tokens(first)
        # Everything but the header is the one kept document.
        assert header(bobs) != header(seen)
        assert bobs.replace(header(bobs), "") == seen.replace(header(seen), "")
    again = ann.get(path).text
    assert "ann@example.com" in header(again) and tokens(again) == tokens(first)


def test_the_log_out_form_of_a_kept_page_logs_out(client: TestClient) -> None:
    guest = other_client(client)
    guest.get(CARD)  # kept as a guest sees it
    signup(client, "ann@example.com")
    page = client.get(CARD).text
    (token,) = tokens(header(page))
    assert client.post("/auth/logout", data={"csrf_token": token}, follow_redirects=False).status_code == 303
    assert client.get("/api/auth/me").json()["guest"] is True
    assert "ann@example.com" not in client.get(CARD).text


def test_a_flash_message_is_shown_on_a_kept_page(client: TestClient) -> None:
    other_client(client).get(CARD)
    signup(client, "ann@example.com")
    token = tokens(client.get(CARD).text).pop()
    client.post("/auth/logout", data={"csrf_token": token}, follow_redirects=False)
    shown = client.get(CARD).text
    assert 'class="flash' in shown  # the log-out's message, not the kept page without it
    assert 'class="flash' not in client.get(CARD).text


@pytest.fixture
def two_servers(settings: Settings) -> Iterator[tuple[TestClient, TestClient]]:
    """Two app instances on one database, as two `kvprep serve` behind a load balancer."""
    with TestClient(create_app(settings)) as one, TestClient(create_app(settings)) as two:
        yield one, two


def test_log_out_on_one_server_is_refused_on_the_other_within_the_second(
    two_servers: tuple[TestClient, TestClient],
) -> None:
    one, two = two_servers
    signup(one, "ann@example.com")
    two.cookies.set("kvprep_session", one.cookies["kvprep_session"])
    for _ in range(20):  # whatever a server kept of the session check while it was good
        assert two.get("/api/auth/me").json()["email"] == "ann@example.com"
        for path in (CARD, "/topics", "/", "/cards", "/challenges", "/quiz", "/progress"):
            assert "ann@example.com" in header(two.get(path).text), path
    assert one.post("/api/auth/logout", headers=BODYLESS).status_code == 204
    ended = time.monotonic()
    assert two.get("/api/auth/me").json()["guest"] is True
    assert two.get("/api/account").json()["email"] is None
    # The kept pages too: a shared page and every personal page the other server kept for Ann.
    for path in (CARD, "/topics", "/", "/cards", "/challenges", "/quiz", "/progress"):
        page = two.get(path)
        assert page.status_code == 200, (path, page.status_code)
        assert "ann@example.com" not in page.text and "Log in" in header(page.text), path
    assert time.monotonic() - ended < 1.0


def test_a_new_password_on_one_server_ends_the_session_on_the_other(
    two_servers: tuple[TestClient, TestClient],
) -> None:
    one, two = two_servers
    signup(one, "ann@example.com")
    login(two, "ann@example.com")
    assert two.get("/api/auth/me").json()["email"] == "ann@example.com"
    body = {"current_password": "correct horse battery", "new_password": "a different horse staple"}
    changed = one.put("/api/account/password", json=body)
    assert changed.status_code == 204, changed.text
    assert two.get("/api/auth/me").json()["guest"] is True
    assert one.get("/api/auth/me").json()["email"] == "ann@example.com"

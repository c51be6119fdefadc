"""Personal API tokens: made and revoked on the account page, shown once, stored hashed, sent as
`Authorization: Bearer`, limited like the account, and refused for forms, pages and what only the
signed-in owner may do."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session, select

from app.config import Settings
from app.main import create_app
from app.models import ApiToken, User
from tests.services.factories import PASSWORD, csrf, fast_settings, signup

EMAIL = "tokens@example.com"
CODE = {"code": "def kv_cache_bytes(config, seq_len, batch, bytes_per_element):\n    return 0\n"}


@pytest.fixture
def settings(db_url: str) -> Settings:
    return fast_settings(
        db_url, submissions_per_minute=3, login_attempts_per_ip_per_minute=3, api_tokens_per_account=2
    )


@pytest.fixture
def client(settings: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(settings)) as test_client:
        yield test_client


def _rows(client: TestClient) -> list[ApiToken]:
    with Session(client.app.state.engine) as session:  # type: ignore[attr-defined]
        return list(session.exec(select(ApiToken)).all())


def make_token(client: TestClient, name: str = "laptop") -> str:
    response = client.post("/account/tokens", data={"name": name, "csrf_token": csrf(client, "/account")})
    assert response.status_code == 200, response.text
    assert response.headers["cache-control"] == "no-store"
    match = re.search(r'id="new-token" class="token-value" value="(kvp_[A-Za-z0-9_-]{43})"', response.text)
    assert match, "the new token is not on the page"
    return match.group(1)


def with_token(client: TestClient, token: str) -> TestClient:
    """A script: no cookies, only the token."""
    return TestClient(client.app, headers={"Authorization": f"Bearer {token}"})


@pytest.fixture
def account(client: TestClient) -> tuple[TestClient, str]:
    signup(client, EMAIL)
    return client, make_token(client)


def test_a_token_is_shown_once_and_stored_only_as_its_hash(account: tuple[TestClient, str]) -> None:
    client, token = account
    (row,) = _rows(client)
    assert row.token_hash == hashlib.sha256(token.encode()).hexdigest()
    assert token not in repr(row.model_dump())
    assert row.name == "laptop" and token.startswith(row.prefix) and len(row.prefix) < 12
    again = client.get("/account").text
    assert token not in again
    assert f"<code>{row.prefix}…</code>" in again and "laptop" in again
    exported = client.get("/api/account/export").json()["tables"]["api_token"]
    assert [t["name"] for t in exported] == ["laptop"] and "token_hash" not in exported[0]


def test_a_script_acts_for_the_account_through_the_json_api(account: tuple[TestClient, str]) -> None:
    client, token = account
    script = with_token(client, token)
    me = script.get("/api/account").json()
    assert me["email"] == EMAIL and me["guest"] is False
    submitted = script.post("/api/challenges/kv-cache-bytes/submissions", json=CODE)
    assert submitted.status_code == 202, submitted.text
    # The browser, signed in, sees the script's submission as its own.
    assert client.get(f"/api/submissions/{submitted.json()['id']}").status_code == 200
    listed = client.get("/api/challenges/kv-cache-bytes/submissions").json()
    assert submitted.json()["id"] in [s["id"] for s in listed]
    (row,) = _rows(client)
    assert row.last_used_at is not None
    assert "never" not in client.get("/account").text.split('id="tokens-title"')[1].split("</table>")[0]


def test_a_revoked_token_stops_working(account: tuple[TestClient, str]) -> None:
    client, token = account
    script = with_token(client, token)
    assert script.get("/api/account").json()["email"] == EMAIL
    (row,) = _rows(client)
    page = client.get("/account").text
    assert f'action="/account/tokens/{row.id}/revoke"' in page
    revoked = client.post(
        f"/account/tokens/{row.id}/revoke",
        data={"csrf_token": csrf(client, "/account")},
        follow_redirects=False,
    )
    assert revoked.status_code == 303
    assert "Token “laptop” revoked" in client.get("/account").text
    refused = script.get("/api/account")
    assert refused.status_code == 401
    assert refused.headers["www-authenticate"] == 'Bearer error="invalid_token"'
    assert "not valid" in refused.json()["detail"]
    assert _rows(client) == []


def test_someone_elses_token_cannot_be_revoked(account: tuple[TestClient, str]) -> None:
    client, token = account
    (row,) = _rows(client)
    other = TestClient(client.app)
    signup(other, "other@example.com")
    response = other.post(f"/account/tokens/{row.id}/revoke", data={"csrf_token": csrf(other, "/account")})
    assert response.status_code == 404
    assert with_token(client, token).get("/api/account").json()["email"] == EMAIL


def test_a_token_never_deletes_the_account(account: tuple[TestClient, str]) -> None:
    client, token = account
    script = with_token(client, token)
    response = script.request("DELETE", "/api/account", json={"password": PASSWORD})
    assert response.status_code == 403
    assert "cannot do this" in response.json()["detail"]
    # Nor through the form, even beside a guest session with a valid CSRF token.
    form = script.post(
        "/account/delete", data={"password": PASSWORD, "csrf_token": csrf(script, "/auth/login")}
    )
    assert form.status_code == 403
    assert client.get("/api/account").json()["email"] == EMAIL
    assert script.get("/api/account").json()["email"] == EMAIL


def test_a_token_never_changes_the_password_or_logs_out(account: tuple[TestClient, str]) -> None:
    client, token = account
    script = with_token(client, token)
    body = {"current_password": PASSWORD, "new_password": "another long password"}
    assert script.put("/api/account/password", json=body).status_code == 403
    assert script.post("/api/auth/logout", headers={"X-Requested-With": "t"}).status_code == 403
    assert script.post("/api/auth/login", json={"email": EMAIL, "password": PASSWORD}).status_code == 403
    # The browser's session lives on, with the old password.
    assert client.get("/api/account").json()["email"] == EMAIL
    assert (
        TestClient(client.app)
        .post("/api/auth/login", json={"email": EMAIL, "password": PASSWORD})
        .status_code
        == 200
    )


def test_a_token_is_no_good_for_forms_or_pages(account: tuple[TestClient, str]) -> None:
    client, token = account
    script = with_token(client, token)
    before = client.get("/api/account").json()["desired_retention"]
    form = script.post(
        "/account/settings",
        data={"retention": "80", "interview_date": "", "csrf_token": csrf(script, "/auth/login")},
    )
    assert form.status_code == 403
    assert "only on the JSON API" in form.text
    assert client.get("/api/account").json()["desired_retention"] == before
    made = script.post("/account/tokens", data={"name": "more", "csrf_token": csrf(script, "/auth/login")})
    assert made.status_code == 403
    assert len(_rows(client)) == 1
    assert script.get("/progress").status_code == 403


def test_a_token_shares_the_accounts_submission_limit(account: tuple[TestClient, str]) -> None:
    client, token = account
    script = with_token(client, token)
    assert client.post("/api/challenges/kv-cache-bytes/submissions", json=CODE).status_code == 202
    assert script.post("/api/challenges/kv-cache-bytes/submissions", json=CODE).status_code == 202
    assert client.post("/api/challenges/kv-cache-bytes/submissions", json=CODE).status_code == 202
    refused = script.post("/api/challenges/kv-cache-bytes/submissions", json=CODE)
    assert refused.status_code == 429
    assert int(refused.headers["retry-after"]) > 0


def test_wrong_tokens_count_as_failed_log_ins_from_the_address(client: TestClient) -> None:
    for guess in ("kvp_" + "a" * 43, "kvp_" + "b" * 43, "not-even-ours"):
        assert with_token(client, guess).get("/api/account").status_code == 401
    assert with_token(client, "kvp_" + "c" * 43).get("/api/account").status_code == 429
    # Log-in from that address is limited too: the same bucket.
    assert client.post("/api/auth/login", json={"email": EMAIL, "password": PASSWORD}).status_code == 429


def test_guests_have_no_tokens_and_an_account_holds_a_few(client: TestClient) -> None:
    refused = client.post("/account/tokens", data={"name": "x", "csrf_token": csrf(client, "/account")})
    assert refused.status_code == 403
    assert "Guests have no API tokens" in refused.text
    assert "Make a token" not in client.get("/account").text
    signup(client, EMAIL)
    unnamed = client.post("/account/tokens", data={"name": "  ", "csrf_token": csrf(client, "/account")})
    assert unnamed.status_code == 422 and "Name the token" in unnamed.text
    make_token(client, "one")
    make_token(client, "two")
    third = client.post("/account/tokens", data={"name": "three", "csrf_token": csrf(client, "/account")})
    assert third.status_code == 409
    assert "already holds 2 tokens" in third.text
    assert sorted(t.name for t in _rows(client)) == ["one", "two"]


def test_deleting_the_account_deletes_its_tokens(account: tuple[TestClient, str]) -> None:
    client, token = account
    deleted = client.post(
        "/account/delete", data={"password": PASSWORD, "csrf_token": csrf(client, "/account")}
    )
    assert deleted.status_code in (200, 303)
    assert _rows(client) == []
    with Session(client.app.state.engine) as session:  # type: ignore[attr-defined]
        assert session.exec(select(User).where(User.email == EMAIL)).first() is None
    assert with_token(client, token).get("/api/account").status_code == 401

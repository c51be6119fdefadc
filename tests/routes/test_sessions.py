"""Sessions end on the server: log-out, password change and the log-in lifetime, copied cookies included."""

from __future__ import annotations

import time

import pytest
from fastapi.testclient import TestClient

from app.config import Settings
from app.cookie_session import LOGIN_AT_KEY
from tests.services.factories import BODYLESS, PASSWORD, csrf, fast_settings, login, other_client, signup

NEW_PASSWORD = "a different horse staple"


@pytest.fixture
def settings(db_url: str) -> Settings:
    return fast_settings(db_url)


def copy_of(client: TestClient) -> TestClient:
    """Someone who copied this browser's session cookie into their own."""
    thief = other_client(client)
    thief.cookies.set("kvprep_session", client.cookies["kvprep_session"])
    return thief


def me(client: TestClient) -> dict:
    return client.get("/api/auth/me").json()


def test_a_copied_cookie_stops_working_at_log_out(client: TestClient) -> None:
    signup(client, "a@example.com")
    thief = copy_of(client)
    assert me(thief)["email"] == "a@example.com"  # the copy works while the session lasts
    token = csrf(client, "/")
    assert client.post("/auth/logout", data={"csrf_token": token}, follow_redirects=False).status_code == 303
    assert me(client)["guest"] is True
    assert me(thief)["guest"] is True
    assert thief.get("/api/account").json()["email"] is None


def test_api_log_out_ends_the_session_too(client: TestClient) -> None:
    signup(client, "a@example.com")
    thief = copy_of(client)
    assert client.post("/api/auth/logout", headers=BODYLESS).status_code == 204
    assert me(thief)["guest"] is True
    # Logging in again works, with a new session; the old copy stays dead.
    login(client, "a@example.com")
    assert me(client)["email"] == "a@example.com" and me(thief)["guest"] is True


def test_changing_the_password_ends_every_other_session(client: TestClient) -> None:
    signup(client, "a@example.com")
    laptop = other_client(client)
    login(laptop, "a@example.com")
    thief = copy_of(client)
    token = csrf(client, "/account")
    form = {"current_password": PASSWORD, "new_password": NEW_PASSWORD, "confirm": NEW_PASSWORD}
    response = client.post("/account/password", data={**form, "csrf_token": token}, follow_redirects=False)
    assert response.status_code == 303 and response.headers["location"] == "/account"
    assert "Password changed" in client.get("/account").text
    assert me(client)["email"] == "a@example.com"  # this browser stays signed in
    assert me(laptop)["guest"] is True and me(thief)["guest"] is True
    # The old password no longer works; the new one does.
    stranger = other_client(client)
    old = stranger.post("/api/auth/login", json={"email": "a@example.com", "password": PASSWORD})
    assert old.status_code == 401
    login(stranger, "a@example.com", NEW_PASSWORD)


def test_the_password_form_names_each_problem(client: TestClient) -> None:
    signup(client, "a@example.com")
    token = csrf(client, "/account")
    base = {
        "current_password": PASSWORD,
        "new_password": NEW_PASSWORD,
        "confirm": NEW_PASSWORD,
        "csrf_token": token,
    }
    wrong = client.post("/account/password", data={**base, "current_password": "not it at all"})
    assert wrong.status_code == 403 and 'id="current_password-error"' in wrong.text
    short = client.post("/account/password", data={**base, "new_password": "short", "confirm": "short"})
    assert short.status_code == 422 and 'id="new_password-error"' in short.text
    differ = client.post("/account/password", data={**base, "confirm": "something else entirely"})
    assert differ.status_code == 422 and "The new passwords differ." in differ.text
    assert (
        client.post(
            "/account/password", data={k: v for k, v in base.items() if k != "csrf_token"}
        ).status_code
        == 403
    )
    assert me(client)["email"] == "a@example.com"  # nothing changed, nobody logged out
    login(other_client(client), "a@example.com")


def test_password_change_through_the_api(client: TestClient) -> None:
    signup(client, "a@example.com")
    thief = copy_of(client)
    body = {"current_password": "wrong wrong wrong", "new_password": NEW_PASSWORD}
    assert client.put("/api/account/password", json=body).status_code == 403
    weak = client.put("/api/account/password", json={"current_password": PASSWORD, "new_password": "x"})
    assert weak.status_code == 422 and isinstance(weak.json()["detail"], list)
    assert me(thief)["email"] == "a@example.com"
    ok = client.put(
        "/api/account/password", json={"current_password": PASSWORD, "new_password": NEW_PASSWORD}
    )
    assert ok.status_code == 204
    assert me(client)["email"] == "a@example.com" and me(thief)["guest"] is True


def test_a_guest_has_no_password_to_change(client: TestClient) -> None:
    assert "Change your password" not in client.get("/account").text
    body = {"current_password": "", "new_password": NEW_PASSWORD}
    assert client.put("/api/account/password", json=body).status_code == 403


def test_a_log_in_expires_after_its_lifetime_even_if_the_cookie_lives_on(db_url: str) -> None:
    from app.main import create_app

    app = create_app(fast_settings(db_url, login_max_age_s=3600))
    with TestClient(app) as client:
        signup(client, "a@example.com")
        assert me(client)["email"] == "a@example.com"
        # The same signed session, made as if the log-in happened 61 minutes ago.
        import base64
        import json

        from itsdangerous import TimestampSigner

        signer = TimestampSigner(app.state.settings.secret_key)
        raw = client.cookies["kvprep_session"]
        data = json.loads(base64.b64decode(signer.unsign(raw.encode())))
        data[LOGIN_AT_KEY] = int(time.time()) - 3660
        forged = signer.sign(base64.b64encode(json.dumps(data).encode())).decode()
        client.cookies.clear()
        client.cookies.set("kvprep_session", forged)
        assert me(client)["guest"] is True
        # A fresh log-in gets a fresh lifetime.
        login(client, "a@example.com")
        assert me(client)["email"] == "a@example.com"

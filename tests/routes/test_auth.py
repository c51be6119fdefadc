"""Sign up, log in, log out: signed cookies, CSRF on forms, rate limits, guest progress moving over."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from app.config import Settings
from app.routes.auth import safe_next
from tests.services.factories import (
    BODYLESS,
    PASSWORD,
    csrf,
    fast_settings,
    finish_quiz,
    login,
    other_client,
    signup,
    start_quiz,
)


@pytest.fixture
def settings(db_url: str) -> Settings:
    return fast_settings(db_url, login_attempts_per_minute=3)


def test_sign_up_log_out_and_in_with_the_html_forms(client: TestClient) -> None:
    assert "Log in" in client.get("/").text
    token = csrf(client, "/auth/signup")
    form = {"email": "Ada@Example.com", "password": PASSWORD, "confirm": PASSWORD, "csrf_token": token}
    response = client.post("/auth/signup", data=form, follow_redirects=False)
    assert response.status_code == 303 and response.headers["location"] == "/"
    cookie = response.headers["set-cookie"].lower()
    assert "kvprep_session=" in cookie and "httponly" in cookie and "samesite=lax" in cookie
    home = client.get("/").text
    assert "ada@example.com" in home and "Log out" in home and "Your account is ready" in home
    me = client.get("/api/auth/me").json()
    assert me["email"] == "ada@example.com" and me["guest"] is False

    token = csrf(client, "/")
    assert client.post("/auth/logout", data={"csrf_token": token}, follow_redirects=False).status_code == 303
    assert client.get("/api/auth/me").json()["guest"] is True
    assert "ada@example.com" not in client.get("/").text

    token = csrf(client, "/auth/login")
    bad = client.post(
        "/auth/login", data={"email": "ada@example.com", "password": "nope nope", "csrf_token": token}
    )
    assert bad.status_code == 401 and "Wrong email or password." in bad.text
    assert 'value="ada@example.com"' in bad.text  # the email is kept in the form
    good = client.post(
        "/auth/login",
        data={"email": "ADA@example.com", "password": PASSWORD, "csrf_token": token, "next": "/progress"},
        follow_redirects=False,
    )
    assert good.status_code == 303 and good.headers["location"] == "/progress"
    assert client.get("/api/auth/me").json()["email"] == "ada@example.com"


@pytest.mark.parametrize("path", ["/auth/signup", "/auth/login", "/auth/logout"])
def test_html_forms_need_the_csrf_token(client: TestClient, path: str) -> None:
    client.get("/")
    data = {"email": "a@example.com", "password": PASSWORD, "confirm": PASSWORD}
    assert client.post(path, data=data).status_code == 403
    assert client.post(path, data={**data, "csrf_token": "forged"}).status_code == 403
    # Another visitor's token is no good either.
    stranger = other_client(client)
    assert client.post(path, data={**data, "csrf_token": csrf(stranger)}).status_code == 403


def test_json_requests_need_no_csrf_token(client: TestClient) -> None:
    assert signup(client, "a@example.com")["email"] == "a@example.com"
    assert client.post("/api/auth/logout", headers=BODYLESS).status_code == 204
    assert client.get("/api/auth/me").json()["guest"] is True
    assert login(client, "a@example.com")["guest"] is False


def test_sign_up_problems_come_back_beside_the_field(client: TestClient) -> None:
    token = csrf(client, "/auth/signup")
    base = {"email": "a@example.com", "password": PASSWORD, "confirm": PASSWORD, "csrf_token": token}
    short = client.post("/auth/signup", data={**base, "password": "short", "confirm": "short"})
    assert short.status_code == 422 and 'id="password-error"' in short.text
    differ = client.post("/auth/signup", data={**base, "confirm": "something else"})
    assert differ.status_code == 422 and "The passwords differ." in differ.text
    email = client.post("/auth/signup", data={**base, "email": "nope"})
    assert email.status_code == 422 and 'id="email-error"' in email.text
    signup(other_client(client), "a@example.com")
    taken = client.post("/auth/signup", data=base)
    assert taken.status_code == 422 and "already has an account" in taken.text
    assert (
        client.post("/api/auth/signup", json={"email": "a@example.com", "password": PASSWORD}).status_code
        == 409
    )
    assert (
        client.post("/api/auth/signup", json={"email": "b@example.com", "password": "x"}).status_code == 422
    )


def test_login_attempts_are_rate_limited(client: TestClient) -> None:
    signup(other_client(client), "a@example.com")
    wrong = {"email": "a@example.com", "password": "wrong password"}
    codes = [client.post("/api/auth/login", json=wrong).status_code for _ in range(4)]
    assert codes == [401, 401, 401, 429]
    limited = client.post("/api/auth/login", json={"email": "a@example.com", "password": PASSWORD})
    assert limited.status_code == 429 and int(limited.headers["retry-after"]) >= 1
    token = csrf(client, "/auth/login")
    page = client.post("/auth/login", data={**wrong, "csrf_token": token})
    assert page.status_code == 429 and "Too many log-in attempts" in page.text


def client_at(client: TestClient, address: str) -> TestClient:
    """Another browser on the same app, connecting from `address`."""
    return TestClient(client.app, client=(address, 40000))


def test_an_attackers_guesses_do_not_lock_the_owner_out(client: TestClient) -> None:
    """The fast limit is per email and address together: the owner, elsewhere, still gets in."""
    signup(other_client(client), "a@example.com")
    attacker = client_at(client, "203.0.113.66")
    wrong = {"email": "a@example.com", "password": "wrong password"}
    codes = [attacker.post("/api/auth/login", json=wrong).status_code for _ in range(4)]
    assert codes == [401, 401, 401, 429]
    # Even the right password is refused to the attacker's address now...
    right = {"email": "A@example.com", "password": PASSWORD}
    assert attacker.post("/api/auth/login", json=right).status_code == 429
    # ...but the owner, at home, logs in.
    owner = client_at(client, "198.51.100.7")
    assert owner.post("/api/auth/login", json=right).status_code == 200


@pytest.mark.parametrize("limit", [5])
def test_one_email_from_many_addresses_meets_the_slower_global_limit(db_url: str, limit: int) -> None:
    from app.main import create_app

    app = create_app(fast_settings(db_url, login_attempts_per_email_per_hour=limit))
    with TestClient(app) as client:
        signup(client, "a@example.com")
        wrong = {"email": "a@example.com", "password": "wrong password"}
        codes = [
            client_at(client, f"203.0.113.{i}").post("/api/auth/login", json=wrong).status_code
            for i in range(limit + 1)
        ]
        assert codes == [401] * limit + [429]
        # Another email is not affected.
        assert (
            client_at(client, "203.0.113.99")
            .post("/api/auth/login", json={"email": "b@example.com", "password": "x"})
            .status_code
            == 401
        )


def test_one_address_trying_many_emails_is_limited(db_url: str) -> None:
    from app.main import create_app

    app = create_app(fast_settings(db_url, login_attempts_per_ip_per_minute=4))
    with TestClient(app) as client:
        codes = [
            client.post("/api/auth/login", json={"email": f"u{i}@example.com", "password": "x"}).status_code
            for i in range(5)
        ]
        assert codes == [401] * 4 + [429]


def test_a_guest_who_signs_up_keeps_their_progress(client: TestClient) -> None:
    quiz = start_quiz(client)
    finish_quiz(client, quiz)
    before = client.get("/api/progress").json()
    assert before["total_reviews"] == 5
    signup(client, "a@example.com")
    after = client.get("/api/progress").json()
    assert after["total_reviews"] == 5 and after["history"] == before["history"]
    assert [q["id"] for q in client.get("/api/quizzes").json()] == [quiz["id"]]


def test_a_guest_who_logs_in_brings_their_progress_into_the_account(client: TestClient) -> None:
    # The account already has one quiz, from another browser.
    laptop = other_client(client)
    signup(laptop, "a@example.com")
    finish_quiz(laptop, start_quiz(laptop, topics=["rope"], size=2))
    # On this browser, a guest takes a quiz and submits a challenge, then logs in.
    guest_quiz = start_quiz(client)
    finish_quiz(client, guest_quiz)
    submission = client.post("/api/challenges/kv-cache-bytes/submissions", json={"code": "x = 1"}).json()[
        "id"
    ]
    login(client, "a@example.com")

    progress = client.get("/api/progress").json()
    assert progress["total_reviews"] == 7
    assert len(client.get("/api/quizzes").json()) == 2
    assert client.get(f"/api/submissions/{submission}").status_code == 200
    assert client.get(f"/api/quizzes/{guest_quiz['id']}").status_code == 200
    # The other browser, signed in to the same account, sees it all too.
    assert laptop.get("/api/progress").json()["total_reviews"] == 7
    assert laptop.get(f"/api/submissions/{submission}").status_code == 200


def test_a_session_ends_when_its_account_is_deleted(client: TestClient) -> None:
    signup(client, "a@example.com")
    copy = other_client(client)
    copy.cookies.update(client.cookies)  # the same cookie, copied to another browser
    assert copy.get("/api/auth/me").json()["guest"] is False
    assert client.request("DELETE", "/api/account", json={"password": PASSWORD}).status_code == 204
    assert copy.get("/api/auth/me").json()["guest"] is True
    signup(other_client(client), "a@example.com")  # a new account under the same email and maybe the same id
    assert copy.get("/api/auth/me").json()["guest"] is True


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("/quiz", "/quiz"),
        ("https://evil.example/", "/"),
        ("//evil.example", "/"),
        ("/\\evil", "/"),
        ("", "/"),
    ],
)
def test_only_same_site_redirects_after_log_in(target: str, expected: str) -> None:
    assert safe_next(target) == expected

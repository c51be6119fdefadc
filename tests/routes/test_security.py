"""Requests no page of ours sends are refused; every response carries the security headers;
hostile input (huge ids, NUL bytes) gets a 422 in the schema's shape, never a 500."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.config import ROOT, Settings
from tests.services.factories import BODYLESS, PASSWORD, csrf, fast_settings, signup, start_quiz


@pytest.fixture
def settings(db_url: str) -> Settings:
    return fast_settings(db_url)


def start_mock(client: TestClient) -> int:
    response = client.post("/api/mock", json={"minutes": 15, "with_challenge": False})
    assert response.status_code == 201, response.text
    return int(response.json()["id"])


def mock_status(client: TestClient, mock_id: int) -> str:
    return str(client.get(f"/api/mock/{mock_id}").json()["status"])


# --- item 9: cross-site and same-site forgery of JSON requests ----------------------------------


def test_a_bodyless_no_cors_post_cannot_end_a_running_mock(client: TestClient) -> None:
    mock_id = start_mock(client)
    assert mock_status(client, mock_id) == "running"
    # What fetch(url, {method: "POST", mode: "no-cors", credentials: "include"}) sends: no body,
    # no Content-Type, an Origin of the (same-site) attacking page.
    forged = client.post(f"/api/mock/{mock_id}/finish", headers={"Origin": "https://evil.testserver"})
    assert forged.status_code == 403
    no_origin = client.post(f"/api/mock/{mock_id}/finish")
    assert no_origin.status_code == 422
    assert no_origin.json()["detail"][0]["loc"] == ["header", "content-type"]
    # A no-cors fetch may send a text/plain body, never application/json.
    plain = client.post(f"/api/mock/{mock_id}/finish", content="{}", headers={"Content-Type": "text/plain"})
    assert plain.status_code == 422
    assert mock_status(client, mock_id) == "running"
    # Our own page's script: same origin, JSON or X-Requested-With.
    ours = client.post(f"/api/mock/{mock_id}/finish", headers={"Origin": "http://testserver", **BODYLESS})
    assert ours.status_code == 200 and mock_status(client, mock_id) != "running"


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("POST", "/api/auth/logout", None),
        ("POST", "/api/quizzes", '{"topics": ["kv-memory"], "size": 2}'),
        ("PUT", "/api/account/settings", '{"desired_retention": 0.8}'),
        ("DELETE", "/api/account", "{}"),
        ("POST", "/api/challenges/kv-cache-bytes/submissions", '{"code": "x = 1"}'),
    ],
)
def test_every_state_changing_json_route_checks_type_and_origin(
    client: TestClient, method: str, path: str, body: str | None
) -> None:
    signup(client, "a@example.com")
    for headers in (
        {"Content-Type": "text/plain"},
        {"Content-Type": "application/x-www-form-urlencoded"},
        {},
    ):
        assert client.request(method, path, content=body, headers=headers).status_code == 422, headers
    for origin in ("https://evil.example", "null", "http://testserver.evil.example", "https://testserver"):
        headers = {"Content-Type": "application/json", "Origin": origin}
        assert client.request(method, path, content=body, headers=headers).status_code == 403, origin
    assert client.get("/api/auth/me").json()["email"] == "a@example.com"  # nothing happened


def test_forms_from_another_origin_are_refused_even_with_a_valid_token(client: TestClient) -> None:
    signup(client, "a@example.com")
    token = csrf(client, "/")
    evil = client.post("/auth/logout", data={"csrf_token": token}, headers={"Origin": "https://evil.example"})
    assert evil.status_code == 403
    assert client.get("/api/auth/me").json()["email"] == "a@example.com"
    same = client.post(
        "/auth/logout",
        data={"csrf_token": token},
        headers={"Origin": "http://testserver"},
        follow_redirects=False,
    )
    assert same.status_code == 303


def test_a_trusted_origin_is_accepted_behind_a_proxy_that_rewrites_host(db_url: str) -> None:
    from app.main import create_app

    app = create_app(fast_settings(db_url, trusted_origins="https://kvprep.example.com/, https://b.example"))
    with TestClient(app) as client:
        signup(client, "a@example.com")
        for origin, status in (
            ("https://kvprep.example.com", 204),
            ("https://evil.example", 403),
        ):
            headers = {"Origin": origin, **BODYLESS}
            assert client.post("/api/auth/logout", headers=headers).status_code == status, origin


# --- item 10: security headers ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "path", ["/", "/cards", "/api/cards", "/static/css/app.css", "/no-such-page", "/api/quizzes/99999999999"]
)
def test_every_response_has_the_security_headers(client: TestClient, path: str) -> None:
    response = client.get(path, headers={"Accept": "text/html"})
    csp = response.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "style-src 'self'" in csp and "frame-ancestors 'none'" in csp
    assert "unsafe-inline" not in csp and "unsafe-eval" not in csp
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["referrer-policy"] == "strict-origin-when-cross-origin"
    assert response.headers["x-frame-options"] == "DENY"
    assert "strict-transport-security" not in response.headers  # development: plain http works


def test_a_routes_own_referrer_policy_wins(client: TestClient) -> None:
    start_mock(client)
    response = client.get("/api/mock/shared/no-such-token")
    assert response.status_code == 404
    assert response.headers["referrer-policy"] == "strict-origin-when-cross-origin"
    assert response.headers.get_list("referrer-policy") == ["strict-origin-when-cross-origin"]


def test_outside_development_hsts_and_secure_cookies(db_url: str) -> None:
    from app.main import create_app

    settings = fast_settings(db_url, environment="production", secret_key="s" * 40)
    with TestClient(create_app(settings), base_url="https://testserver") as client:
        response = client.get("/")
        assert response.headers["strict-transport-security"].startswith("max-age=63072000")
        cookie = response.headers["set-cookie"].lower()
        assert "kvprep_session=" in cookie and "; secure" in cookie and "httponly" in cookie


def test_templates_have_no_inline_script_or_style() -> None:
    """The CSP refuses them; a data block (type="application/json") is not a script."""
    import re

    problems = []
    for path in sorted(Path(ROOT / "templates").rglob("*.html")):
        text = path.read_text()
        for tag in re.findall(r"<script\b[^>]*>", text):
            if "src=" not in tag and 'type="application/json"' not in tag:
                problems.append(f"{path.name}: {tag}")
        if re.search(r"\sstyle\s*=", text) or "<style" in text or re.search(r"\son[a-z]+\s*=", text):
            problems.append(f"{path.name}: inline style or handler")
    assert problems == []


# --- item 11: huge ids, NUL bytes, error bodies in the schema's shape --------------------------------


HUGE = [2**31, 2**63, 2**64, 10**30]


@pytest.mark.parametrize("number", HUGE)
def test_huge_ids_are_422_not_500(client: TestClient, number: int) -> None:
    quiz = start_quiz(client)
    for path in (
        f"/api/quizzes/{number}",
        f"/api/quizzes/{quiz['id']}/items/{number}",
        f"/api/mock/{number}",
        f"/api/mock/{number}/report",
        f"/quiz/{number}",
        f"/mock/{number}",
    ):
        response = client.get(path)
        assert response.status_code == 422, (path, response.status_code, response.text[:200])
    answer = client.post(f"/api/quizzes/{number}/items/0/answer", json={"answer": "x"})
    assert answer.status_code == 422
    mock_id = start_mock(client)
    body = {"position": number, "text": "x"}
    assert client.post(f"/api/mock/{mock_id}/answers", json=body).status_code == 422
    score = {"items": [{"position": number}]}
    assert client.post(f"/api/mock/{mock_id}/score", json=score).status_code == 422
    huge_size = client.post("/api/quizzes", json={"size": number})
    assert huge_size.status_code == 422
    assert client.post("/api/mock", json={"minutes": number}).status_code == 422


def test_the_largest_valid_id_is_a_plain_404(client: TestClient) -> None:
    assert client.get(f"/api/quizzes/{2**31 - 1}").status_code == 404
    assert client.get(f"/api/mock/{2**31 - 1}").status_code == 404


def test_nul_bytes_are_422_everywhere(client: TestClient) -> None:
    nul = "a\x00b"
    login = client.post("/api/auth/login", json={"email": f"{nul}@example.com", "password": PASSWORD})
    assert login.status_code == 422
    assert (
        client.post("/api/auth/signup", json={"email": "x@example.com", "password": nul * 5}).status_code
        == 422
    )
    quiz = start_quiz(client)
    answer = client.post(f"/api/quizzes/{quiz['id']}/items/0/answer", json={"answer": nul})
    assert answer.status_code == 422
    code = client.post("/api/challenges/kv-cache-bytes/submissions", json={"code": f"x = 1 # {nul}"})
    assert code.status_code == 422
    mock_id = start_mock(client)
    assert client.post(f"/api/mock/{mock_id}/answers", json={"position": 0, "text": nul}).status_code == 422
    assert client.post("/api/quizzes", json={"topics": [nul]}).status_code == 422
    for path in ("/api/cards/a%00b", "/cards/a%00b", "/api/challenges/a%00b", "/api/submissions/a%00b",
                 "/api/mock/shared/a%00b", "/api/cards?q=a%00b", "/cards?q=%00"):  # fmt: skip
        response = client.get(path)
        assert response.status_code == 422, (path, response.status_code)
        assert response.json()["detail"][0]["msg"] == "NUL characters are not allowed"
    # HTML forms too: the log-in form keeps nothing of a NUL email, and nothing reaches the database.
    token = csrf(client, "/auth/login")
    form = client.post("/auth/login", data={"email": nul, "password": PASSWORD, "csrf_token": token})
    assert form.status_code == 422
    token = csrf(client, f"/quiz/{quiz['id']}/items/1")
    form = client.post(f"/quiz/{quiz['id']}/items/1/answer", data={"answer": nul, "csrf_token": token})
    assert form.status_code == 422


def test_error_bodies_match_the_openapi_schema(client: TestClient) -> None:
    """Every 422 is {"detail": [{"loc": [...], "msg": str, "type": str}]}, as the schema says."""
    responses = [
        client.get("/api/cards?topic=no-such-topic"),
        client.post("/api/quizzes", json={"topics": ["no-such-topic"]}),
        client.post("/api/auth/signup", json={"email": "not an email", "password": PASSWORD}),
        client.post("/api/mock", json={"minutes": 15, "topics": ["no-such-topic"]}),
        client.get("/api/quizzes/0"),
    ]
    for response in responses:
        assert response.status_code == 422, response.text
        detail = response.json()["detail"]
        assert isinstance(detail, list) and detail, response.text
        for error in detail:
            assert isinstance(error["loc"], list) and all(isinstance(p, str | int) for p in error["loc"])
            assert isinstance(error["msg"], str) and isinstance(error["type"], str)

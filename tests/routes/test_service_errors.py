"""One translation of a service's refusal (ServiceError): the API's JSON keeps the shape clients
know and adds the field; a page shows the message beside that field and keeps what was chosen."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient

from app.main import create_app
from tests.services.factories import BODYLESS, PASSWORD, csrf, fast_settings, other_client, signup


def _fieldset(html: str, legend: str) -> str:
    """The fieldset whose legend starts with `legend`."""
    match = re.search(r"<fieldset[^>]*>\s*<legend>" + legend + r".*?</fieldset>", html, re.S)
    assert match, f"no fieldset {legend!r}"
    return match.group(0)


def test_a_422_keeps_its_validation_shape_and_names_the_field(client: TestClient) -> None:
    response = client.post("/api/mock", json={"minutes": 15, "topics": ["no-such-topic"]})
    assert response.status_code == 422
    assert response.json() == {
        "detail": [{"loc": ["body"], "msg": "Unknown topic 'no-such-topic'", "type": "value_error"}],
        "field": "topics",
    }
    quiz = client.post("/api/quizzes", json={"size": 9_999})
    assert quiz.status_code == 422 and quiz.json()["field"] == "size"


def test_other_statuses_answer_detail_as_a_string(client: TestClient) -> None:
    signup(client, "taken@example.com")
    again = client.post("/api/auth/signup", json={"email": "taken@example.com", "password": PASSWORD})
    assert again.status_code == 409
    assert again.json() == {"detail": "That email already has an account: log in instead.", "field": "email"}
    wrong = client.post("/api/auth/login", json={"email": "taken@example.com", "password": "not it"})
    assert wrong.status_code == 401 and wrong.json()["detail"] == "Wrong email or password."
    refused = client.put(
        "/api/account/password", json={"current_password": "not it", "new_password": "x" * 20}
    )
    assert refused.status_code == 403 and refused.json()["field"] == "current_password"


def test_the_mock_setup_shows_the_error_beside_its_field_and_keeps_the_choices(client: TestClient) -> None:
    data = {
        "csrf_token": csrf(client, "/mock"),
        "length": "45",
        "topics": "no-such-topic",
        "difficulty": "hard",
    }
    page = client.post("/mock", data=data)
    assert page.status_code == 422
    topics = _fieldset(page.text, "Topics")
    assert 'class="field-error"' in topics and "Unknown topic" in topics
    assert "Unknown topic" not in _fieldset(page.text, "Length")
    assert re.search(r'value="45"\s+checked', page.text)
    assert re.search(r'value="hard"\s+selected', page.text)


def test_the_quiz_start_shows_the_error_beside_its_field(client: TestClient) -> None:
    token = csrf(client, "/quiz")
    no_kind = client.post("/quiz", data={"csrf_token": token, "size": "7"})
    assert no_kind.status_code == 422
    assert "at least one kind" in _fieldset(no_kind.text, "Options") and 'value="7"' in no_kind.text
    unknown = client.post("/quiz", data={"csrf_token": token, "topics": "no-such-topic", "kinds": "recall"})
    assert unknown.status_code == 422 and "Unknown topic" in _fieldset(unknown.text, "Topics")


def test_a_made_up_option_is_refused_by_the_api_and_the_page_alike(client: TestClient) -> None:
    """A picked index the question does not have: 422 naming `picked`, nothing graded."""
    token = csrf(client, "/quiz")
    quiz = client.post("/api/quizzes", json={"topics": ["rope"], "size": 1, "kinds": ["choice"]}).json()
    api = client.post(f"/api/quizzes/{quiz['id']}/items/0/answer", json={"picked": [99]})
    assert api.status_code == 422 and api.json() == {
        "detail": [{"loc": ["body"], "msg": "No such option", "type": "value_error"}],
        "field": "picked",
    }
    page = client.post(f"/quiz/{quiz['id']}/items/0/answer", data={"csrf_token": token, "picked": "99"})
    assert page.status_code == 200 and "No such option" in page.text and 'name="picked"' in page.text
    still_open = client.get(f"/api/quizzes/{quiz['id']}").json()["items"][0]
    assert still_open["state"] == "open"


def test_the_json_of_a_404_and_a_422_keeps_its_shape(client: TestClient) -> None:
    """Clients read these bodies: a sentence under `detail` (a list of validation errors for a
    422, whoever raised it), nothing else."""
    missing = client.get("/api/cards/no-such-card")
    assert (missing.status_code, missing.json()) == (404, {"detail": "Card not found"})
    unknown_path = client.get("/api/no-such-thing")
    assert (unknown_path.status_code, unknown_path.json()) == (404, {"detail": "Not Found"})
    malformed = client.post("/api/quizzes", json={"size": "many"})
    assert malformed.status_code == 422
    [problem] = malformed.json()["detail"]
    assert set(malformed.json()) == {"detail"} and set(problem) == {"loc", "msg", "type"}
    assert problem["loc"] == ["body", "size"]
    run = client.post(
        "/api/challenges/kv-cache-bytes/run", json={"code": "x = 1", "input": {"no_such_parameter": 1}}
    )
    assert run.status_code == 422 and set(run.json()) == {"detail"}
    assert run.json()["detail"][0]["loc"][:2] == ["body", "input"]


def test_the_json_of_a_429_keeps_its_shape(db_url: str) -> None:
    with TestClient(create_app(fast_settings(db_url, login_attempts_per_minute=1))) as client:
        signup(other_client(client), "shape@example.com")
        wrong = {"email": "shape@example.com", "password": "not it"}
        assert client.post("/api/auth/login", json=wrong).status_code == 401
        limited = client.post("/api/auth/login", json=wrong)
    assert limited.status_code == 429
    wait = int(limited.headers["Retry-After"])
    assert wait >= 1 and limited.json() == {"detail": f"Too many log-in attempts: try again in {wait} s"}


def test_a_fit_refused_for_too_few_reviews_says_so_in_a_sentence(client: TestClient) -> None:
    """Nothing the visitor sent was wrong, their reviews decide: a 409 whose detail is a sentence."""
    refused = client.post("/api/settings/scheduling/fit", headers=BODYLESS)
    assert refused.status_code == 409 and set(refused.json()) == {"detail"}
    assert isinstance(refused.json()["detail"], str) and "more to go" in refused.json()["detail"]

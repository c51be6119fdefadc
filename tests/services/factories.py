"""Test data for accounts, quizzes and reviews, shared by tests/services and tests/routes."""

from __future__ import annotations

import re
from functools import lru_cache

from fastapi.testclient import TestClient
from sqlmodel import Session

from app.config import ROOT, Settings
from app.content.catalog import Catalog, load_catalog
from app.models import User

PASSWORD = "correct horse battery"
# What a script sends with a JSON POST that has no body (app/security.py: only same-origin
# scripts can set X-Requested-With, so a form or a no-cors fetch cannot).
BODYLESS = {"X-Requested-With": "fetch"}


def fast_settings(db_url: str, **overrides: object) -> Settings:
    """The app's settings with cheap password hashing and no FSRS fuzz, so due dates are exact."""
    values: dict[str, object] = dict(
        database_url=db_url,
        content_root=ROOT / "questions",
        grading_workers=0,
        embedded_queue="memory",
        argon2_time_cost=1,
        argon2_memory_kib=1024,
        fsrs_fuzzing=False,
    )
    return Settings(**(values | overrides))  # type: ignore[arg-type]


@lru_cache
def catalog() -> Catalog:
    return load_catalog(ROOT / "questions")


def make_user(session: Session, *, email: str | None = None, guest_token: str | None = None) -> User:
    user = User(email=email, guest_token=guest_token if email is None else None)
    session.add(user)
    session.commit()
    session.refresh(user)
    return user


def csrf(client: TestClient, path: str = "/auth/login") -> str:
    match = re.search(r'name="csrf_token" value="([^"]+)"', client.get(path).text)
    assert match, f"no CSRF token on {path}"
    return match.group(1)


def signup(client: TestClient, email: str, password: str = PASSWORD) -> dict:
    response = client.post("/api/auth/signup", json={"email": email, "password": password})
    assert response.status_code == 201, response.text
    return response.json()


def login(client: TestClient, email: str, password: str = PASSWORD) -> dict:
    response = client.post("/api/auth/login", json={"email": email, "password": password})
    assert response.status_code == 200, response.text
    return response.json()


def other_client(client: TestClient) -> TestClient:
    """A second browser on the same running app: its own cookies, so its own guest."""
    return TestClient(client.app)


def start_quiz(client: TestClient, **spec: object) -> dict:
    body = {"topics": ["kv-memory", "mha-mqa-gqa"], "size": 5} | spec
    response = client.post("/api/quizzes", json=body)
    assert response.status_code == 201, response.text
    return response.json()


def finish_quiz(client: TestClient, quiz: dict, rating: str = "good") -> None:
    """Answer every question the quiz started with: recall rated `rating`, choice and numeric answered
    (they rate themselves). The repeats a miss queues at the end are left unanswered."""
    for item in quiz["items"]:
        base = f"/api/quizzes/{quiz['id']}/items/{item['position']}"
        if item["kind"] == "recall":
            assert client.post(base + "/answer", json={"answer": "keys and values"}).status_code == 200
            assert client.post(base + "/rate", json={"rating": rating, "key_points": [0]}).status_code == 200
        elif item["kind"] == "choice":
            assert client.post(base + "/answer", json={"picked": [0]}).status_code == 200
        else:
            assert client.post(base + "/answer", json={"value": "0.000123", "unit": None}).status_code == 200

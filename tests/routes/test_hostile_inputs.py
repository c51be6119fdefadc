"""Hostile values a fuzzer or an attacker sends answer a clear 4xx, never a 500: ids and numbers
past any integer column, non-finite floats, bytes that are no UTF-8, lone surrogates, a NUL where
a test elsewhere does not send one (tests/routes/test_security.py has the NUL in every kind of field),
JSON nested thousands deep."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from tests.services.factories import signup

HUGE = "9" * 40
JSON = {"Content-Type": "application/json", "X-Requested-With": "test"}

GETS = [
    "/cards/%00",
    f"/api/cards?page={HUGE}",
    "/api/cards?page_size=1e999",
    f"/api/quizzes/{HUGE}",
    f"/api/quizzes/1/items/{HUGE}",
    "/api/mock/-1",
    f"/api/mock/{HUGE}",
    f"/quiz/{HUGE}",
    f"/api/lab/runs/{HUGE}",
    f"/api/calculator?context={HUGE}",
    "/api/calculator?context=1e400",
    "/api/calculator?gpu=%ff%fe",
    "/api/cards?topic=%ff",
    "/api/cards/%ed%a0%80",  # an encoded lone surrogate
    "/api/submissions/x?wait=nan",
    "/api/submissions/x?wait=inf",
    "/api/export/anki?topic=%00",
]

POSTS = [
    ("/api/quizzes", f'{{"size": {HUGE}}}'),
    ("/api/quizzes", '{"size": 1e400}'),
    ("/api/quizzes", '{"topics": ["\\ud800"]}'),
    ("/api/quizzes", '{"mode": "\xff"}'),
    ("/api/quizzes", "[" * 5000 + "]" * 5000),
    ("/api/mock", '{"minutes": NaN}'),
    ("/api/mock", f'{{"minutes": {HUGE}}}'),
    ("/api/challenges/fix-causal-attention/run", f'{{"code": "x", "input": {{"d": {HUGE}}}}}'),
    ("/api/challenges/fix-causal-attention/run", '{"code": "x", "input": {"d": Infinity}}'),
    ("/api/challenges/fix-causal-attention/run", '{"code": "x", "input": {"\\u0000": 1}}'),
    ("/api/challenges/fix-causal-attention/submissions", '{"code": "\\ud800\\ud800x"}'),
    ("/api/key-points/suggest", '{"card_id": "\\u0000", "answer": "x"}'),
]


@pytest.mark.parametrize("path", GETS)
def test_a_hostile_query_or_path_is_a_4xx(client: TestClient, path: str) -> None:
    response = client.get(path)
    assert 400 <= response.status_code < 500, (path, response.status_code, response.text[:200])


@pytest.mark.parametrize(("path", "body"), POSTS)
def test_a_hostile_body_is_a_4xx(client: TestClient, path: str, body: str) -> None:
    signup(client, "hostile@example.com")
    response = client.post(path, content=body.encode("utf-8", "surrogatepass"), headers=JSON)
    assert 400 <= response.status_code < 500, (path, response.status_code, response.text[:200])
    assert response.headers["content-type"].startswith("application/json")

"""Code that is not text (a lone surrogate) is refused with a clear 422 by Submit and Run, never a 500."""

from __future__ import annotations

import json

from fastapi.testclient import TestClient

SLUG = "fix-causal-attention"
# JSON escapes for two lone high surrogates: valid JSON, but no UTF-8 text holds them.
BODY = '{"code": "\\ud800\\ud800x = 1"}'
HEADERS = {"Content-Type": "application/json"}


def test_submit_refuses_a_lone_surrogate(client: TestClient) -> None:
    response = client.post(f"/api/challenges/{SLUG}/submissions", content=BODY, headers=HEADERS)
    assert response.status_code == 422, response.text
    assert "lone surrogate (U+D800) at character 0" in response.text
    assert client.get(f"/api/challenges/{SLUG}/submissions").json() == []  # nothing was stored


def test_run_refuses_a_lone_surrogate(client: TestClient) -> None:
    body = json.dumps({"code": "x = 1", "input": None}).replace("x = 1", "\\udfffx = 1")
    response = client.post(f"/api/challenges/{SLUG}/run", content=body, headers=HEADERS)
    assert response.status_code == 422, response.text
    assert "lone surrogate (U+DFFF)" in response.text
    assert "runner failed" not in response.text

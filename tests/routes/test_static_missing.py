"""A missing /static file asked for as a page gets the 404 page with the security headers, not a 500."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient


@pytest.mark.parametrize("accept", ["text/html", "*/*"])
def test_a_missing_static_file_is_a_404_with_csp(client: TestClient, accept: str) -> None:
    response = client.get("/static/no-such-file.js", headers={"Accept": accept})
    assert response.status_code == 404, response.text
    assert "default-src" in response.headers.get("content-security-policy", "")

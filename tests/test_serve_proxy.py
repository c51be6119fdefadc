"""`kvprep serve` believes X-Forwarded-For only from the proxies it is told about.

uvicorn on its own trusts the header from 127.0.0.1, so anyone connecting locally (or through a
proxy that passes the header on) could rotate it and walk around the per-address log-in limits.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.live import serve

NO_GRADING = {"KVPREP_GRADING_WORKERS": "0"}  # these tests log in; nothing is graded


def post_status(base: str, path: str, email: str, forwarded_for: str) -> int:
    body = json.dumps({"email": email, "password": "long enough password"}).encode()
    request = urllib.request.Request(
        base + path,
        data=body,
        headers={"Content-Type": "application/json", "X-Forwarded-For": forwarded_for},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


@pytest.mark.slow
def test_rotating_x_forwarded_for_does_not_escape_the_limits(tmp_path: Path) -> None:
    env = {
        "KVPREP_GRADING_WORKERS": "0",
        "KVPREP_LOGIN_ATTEMPTS_PER_IP_PER_MINUTE": "3",
        "KVPREP_SIGNUPS_PER_HOUR": "2",
    }
    with serve(tmp_path / "a", **env) as base:
        # A different email each time, so only the per-address limit can stop it.
        logins = [
            post_status(base, "/api/auth/login", f"u{i}@example.com", f"198.51.100.{i}") for i in range(5)
        ]
        signups = [
            post_status(base, "/api/auth/signup", f"s{i}@example.com", f"192.0.2.{i}") for i in range(4)
        ]
    assert logins == [401, 401, 401, 429, 429]
    assert signups == [201, 201, 429, 429]


@pytest.mark.slow
def test_a_configured_proxy_is_believed(tmp_path: Path) -> None:
    """Behind a proxy at 127.0.0.1, each forwarded address is a client of its own."""
    env = {
        "KVPREP_GRADING_WORKERS": "0",
        "KVPREP_LOGIN_ATTEMPTS_PER_IP_PER_MINUTE": "3",
        "KVPREP_FORWARDED_ALLOW_IPS": "127.0.0.1",
    }
    with serve(tmp_path / "b", **env) as base:
        rotating = [
            post_status(base, "/api/auth/login", f"u{i}@example.com", f"198.51.100.{i}") for i in range(5)
        ]
        same = [post_status(base, "/api/auth/login", f"v{i}@example.com", "203.0.113.9") for i in range(4)]
    assert rotating == [401] * 5
    assert same == [401, 401, 401, 429]

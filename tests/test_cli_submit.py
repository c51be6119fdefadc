"""Practice at home, submit from the terminal, for real: `kvprep serve` on a fresh SQLite file, an
account signed up over HTTP, a personal API token made through the account page's form as a
person makes one, then `python -m app.cli challenges pull` and `python -m app.cli submit ... --token`
as subprocesses. The worked solution passes (exit 0, the verdict printed), the starter does not
(exit 1, the grader's diagnosis printed), and both attempts are the account's. Graded in the real sandbox
of the server's own grading workers."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx2 as httpx
import pytest

from app.config import ROOT
from tests.live import serve

pytestmark = pytest.mark.sandbox

SLUG = "fix-causal-attention"  # its starter is buggy code the grader diagnoses
CHALLENGE = ROOT / "questions" / "challenges" / SLUG
EMAIL = "terminal@example.com"
PASSWORD = "correct horse battery"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with serve(tmp_path_factory.mktemp("cli-live")) as base:
        yield base


@pytest.fixture(scope="module")
def account(server: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server, timeout=30, headers={"Origin": server}) as client:
        response = client.post("/api/auth/signup", json={"email": EMAIL, "password": PASSWORD})
        assert response.status_code == 201, response.text
        yield client


def token_from_the_account_page(client: httpx.Client) -> str:
    page = client.get("/account").text
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', page)
    assert csrf, "no CSRF token on /account"
    made = client.post(
        "/account/tokens", data={"name": "terminal", "csrf_token": csrf.group(1)}, follow_redirects=True
    )
    assert made.status_code == 200, made.text
    shown = re.search(r'id="new-token" class="token-value" value="(kvp_[A-Za-z0-9_-]{43})"', made.text)
    assert shown, "the new token is not on the page"
    return shown.group(1)


def kvprep(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app.cli", *args], cwd=cwd, capture_output=True, text=True, timeout=300
    )


def test_submit_with_a_token_prints_the_verdict_and_the_attempt_is_the_accounts(
    server: str, account: httpx.Client, tmp_path: Path
) -> None:
    token = token_from_the_account_page(account)
    flags = ["--server", server, "--token", token]

    # The prompt and starter, from the running server.
    pulled = kvprep("challenges", "pull", SLUG, "--server", server, "--dir", "work", cwd=tmp_path)
    assert pulled.returncode == 0, pulled.stderr
    starter = tmp_path / "work" / "starter.py"
    assert starter.read_text() == (CHALLENGE / "starter.py").read_text()
    assert (tmp_path / "work" / "prompt.md").read_text().strip() == (
        CHALLENGE / "prompt.md"
    ).read_text().strip()
    again = kvprep("challenges", "pull", SLUG, "--server", server, "--dir", "work", cwd=tmp_path)
    assert again.returncode == 2 and "--force" in again.stderr  # never over an edited file

    # The starter is the buggy attention to fix: a failing verdict with the grader's diagnosis.
    failed = kvprep("submit", SLUG, str(starter), *flags, cwd=tmp_path)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert failed.stdout.startswith(f"{SLUG}: FAILED") and "\ndiagnosis:\n" in failed.stdout, failed.stdout
    assert "the mask is applied after the softmax" in failed.stdout.split("diagnosis:")[1]
    assert "no token" not in failed.stderr

    # The worked solution passes.
    solution = tmp_path / "solution.py"
    solution.write_text((CHALLENGE / "solution.py").read_text())
    passed = kvprep("submit", SLUG, str(solution), *flags, cwd=tmp_path)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert passed.stdout.startswith(f"{SLUG}: PASSED"), passed.stdout

    # Both are the account's, as its own challenge history shows.
    history = account.get(f"/api/challenges/{SLUG}/submissions")
    assert history.status_code == 200, history.text
    verdicts = sorted(s["verdict"] for s in history.json())
    assert "passed" in verdicts and len(verdicts) == 2, verdicts

    # A made-up token is refused, with the server's words, exit 2.
    refused = kvprep(
        "submit", SLUG, str(solution), "--server", server, "--token", "kvp_" + "x" * 43, cwd=tmp_path
    )
    assert refused.returncode == 2 and "refused (401)" in refused.stderr, refused.stderr

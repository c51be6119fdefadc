"""POST /api/challenges/{slug}/run and GET .../examples: the page's Run, through HTTP and the real sandbox."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from app.config import ROOT, Settings
from app.main import create_app
from app.services.challenge_runs import RunsInProgress
from app.services.ratelimit import RateLimiter
from graders.checks import CHALLENGE_MODULES
from tests.services.factories import fast_settings, signup

CHALLENGES = ROOT / "questions" / "challenges"
SLUG = "fix-causal-attention"
SOLUTION = (CHALLENGES / SLUG / "solution.py").read_text()
STARTER = (CHALLENGES / SLUG / "starter.py").read_text()


@pytest.fixture
def settings(db_url: str) -> Settings:
    return fast_settings(db_url, submissions_per_minute=3, grade_wall_seconds=3.0, grade_cpu_seconds=3)


@pytest.fixture
def client(settings: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(settings)) as test_client:
        yield test_client


def run(client: TestClient, code: str, custom: object = None, slug: str = SLUG):  # type: ignore[no-untyped-def]
    return client.post(f"/api/challenges/{slug}/run", json={"code": code, "input": custom})


@pytest.mark.parametrize("slug", sorted(CHALLENGE_MODULES))
def test_every_challenge_serves_its_examples_and_custom_input_schema(client: TestClient, slug: str) -> None:
    data = client.get(f"/api/challenges/{slug}/examples").json()
    assert data["challenge"] == slug and data["summary"]
    assert 2 <= len(data["examples"]) <= 3
    for param in data["params"]:
        assert param["kind"] in ("int", "float", "bool") and param["label"]
        assert param["kind"] == "bool" or param["minimum"] <= param["default"] <= param["maximum"]


def test_an_unknown_challenge_is_404(client: TestClient) -> None:
    assert client.get("/api/challenges/nope/examples").status_code == 404
    assert run(client, SOLUTION, slug="nope").status_code == 404


def test_a_guest_runs_the_examples_and_a_custom_input_and_nothing_is_stored(client: TestClient) -> None:
    response = run(client, SOLUTION, {"B": 2, "T": 7, "n_heads": 4, "d": 32})
    assert response.status_code == 200, response.text
    data = response.json()
    assert data["verdict"] == "passed" and data["message"] == ""
    assert [c["passed"] for c in data["examples"]] == [True, True, True]
    custom = data["custom"]
    assert custom["custom"] and custom["input"] == {"B": 2, "T": 7, "d": 32, "n_heads": 4, "seed": 0}
    output = custom["outputs"][0]
    assert output["expected"]["shape"] == [2, 7, 32] and output["got"]["shape"] == [2, 7, 32]
    assert output["tolerance"] == "rtol=0.0001, atol=1e-05" and output["first_mismatch"] is None
    # A Run is a try, not an attempt: no submission, and the solution stays locked.
    assert client.get(f"/api/challenges/{SLUG}/submissions").json() == []
    assert client.get(f"/api/challenges/{SLUG}/solution").status_code == 403


def test_a_wrong_solution_gets_the_difference_and_the_reference_beside_it(client: TestClient) -> None:
    data = run(client, STARTER).json()
    assert data["verdict"] == "failed" and data["custom"] is None
    failed = data["examples"][0]
    assert not failed["passed"] and "Likely cause: the mask is applied after the softmax" in failed["message"]
    output = failed["outputs"][0]
    assert output["max_abs_diff"] > 0.01 and output["first_mismatch"]["index"] == [0, 0, 0]
    assert output["expected"]["leading"] != output["got"]["leading"]


def test_a_signed_in_user_can_run_too(client: TestClient) -> None:
    signup(client, "runner@example.com")
    assert run(client, SOLUTION).json()["verdict"] == "passed"


def test_oversized_code_is_refused_with_413(client: TestClient) -> None:
    response = run(client, "#" * (64 * 1024 + 1))
    assert response.status_code == 413 and "64 KiB" in response.json()["detail"]


def test_a_refused_custom_parameter_is_named_in_the_422(client: TestClient) -> None:
    response = run(client, SOLUTION, {"n_heads": 3})
    assert response.status_code == 422
    (error,) = response.json()["detail"]
    assert error["loc"] == ["body", "input", "d"] and "multiple of n_heads" in error["msg"]
    response = run(client, SOLUTION, {"T": 10_000})
    assert response.json()["detail"][0]["loc"] == ["body", "input", "T"]
    assert "between 1 and 32" in response.json()["detail"][0]["msg"]


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"code": 3},
        {"code": "x", "input": [1]},
        {"code": "x", "input": {"T": "big"}},
        {"code": "x", "extra": 1},
    ],
)
def test_a_malformed_body_is_422(client: TestClient, body: dict[str, object]) -> None:
    assert client.post(f"/api/challenges/{SLUG}/run", json=body).status_code == 422


@pytest.mark.parametrize(
    ("code", "verdict"),
    [
        (
            "import os\ndef causal_self_attention(x, w_qkv, w_o, n_heads):\n    return os.system('id')\n",
            "error",
        ),
        ("def causal_self_attention(x, w_qkv, w_o, n_heads):\n    while True:\n        pass\n", "timeout"),
        ("def causal_self_attention(:\n", "error"),
    ],
)
def test_hostile_or_broken_code_gets_a_result_not_a_crash(
    client: TestClient, code: str, verdict: str
) -> None:
    response = run(client, code, {})
    assert response.status_code == 200, response.text
    data = response.json()
    assert data["verdict"] == verdict and data["message"]


def test_running_too_fast_is_429_with_retry_after(client: TestClient) -> None:
    for _ in range(3):
        assert run(client, "x = 1\n").status_code == 200
    response = run(client, "x = 1\n")
    assert response.status_code == 429 and int(response.headers["Retry-After"]) >= 1


def test_a_second_run_while_the_first_is_going_is_refused(client: TestClient) -> None:
    assert run(client, "x = 1\n").status_code == 200  # the guest's session cookie, for both runs
    first: list[int] = []
    thread = threading.Thread(
        target=lambda: first.append(run(client, "import time\ntime.sleep(2)\n").status_code)
    )
    thread.start()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not len(client.app.state.challenge_runs):  # type: ignore[attr-defined]
        time.sleep(0.01)
    second = run(client, "x = 1\n")
    thread.join()
    assert first == [200]
    assert second.status_code == 429 and "still going" in second.json()["detail"]
    assert second.headers["Retry-After"] == "1"


def test_one_run_per_visitor_is_claimed_and_released() -> None:
    runs = RunsInProgress()
    with runs.claim("a") as first:
        with runs.claim("a") as again, runs.claim("b") as other:
            assert first and not again and other
        assert "a" in runs and "b" not in runs and len(runs) == 1
    assert "a" not in runs


def test_cookieless_runs_are_limited_per_address(client: TestClient) -> None:
    """Each cookieless request is a new visitor; the address's own count still stops them."""
    limit = client.app.state.settings.runs_per_address_per_minute  # type: ignore[attr-defined]
    client.app.state.limiters.run_ip = RateLimiter("2/minute", "memory://")  # type: ignore[attr-defined]
    codes = [
        run(TestClient(client.app, client=("10.1.0.7", 50000 + i)), "x = 1\n").status_code for i in range(3)
    ]
    assert codes == [200, 200, 429] and limit == 20
    other = TestClient(client.app, client=("10.1.0.8", 50100))
    assert run(other, "x = 1\n").status_code == 200  # another address has its own count


def test_runs_wait_for_their_own_slots_and_are_refused_when_none_frees() -> None:
    runs = RunsInProgress(slots=1)
    with runs.slot(1.0) as first:
        with runs.slot(0.05) as second:
            assert first and not second
    with runs.slot(0.05) as again:
        assert again

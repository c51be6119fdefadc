"""Challenges and submissions through the HTTP API (CONTRACT.md), with real grading threads."""

from __future__ import annotations

import time

import pytest
from fastapi.testclient import TestClient

from app.config import ROOT, Settings
from app.main import create_app
from graders.checks import CHALLENGE_MODULES

CHALLENGES = ROOT / "questions" / "challenges"
SLUGS = list(CHALLENGE_MODULES)  # every challenge with a grader, in the registry's order
SERVING = ["paged-kv-cache", "speculative-decoding", "sampling", "int8-kv-cache"]


def wait_for_verdict(client: TestClient, submission_id: str, timeout: float = 30) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        data = client.get(f"/api/submissions/{submission_id}").json()
        if data["status"] == "done":
            return data
        time.sleep(0.02)
    raise AssertionError(f"no verdict for {submission_id} within {timeout} s")


def submit(client: TestClient, slug: str, code: str) -> str:
    """POST a submission; its id."""
    response = client.post(f"/api/challenges/{slug}/submissions", json={"code": code})
    assert response.status_code == 202, response.text
    return str(response.json()["id"])


def test_challenge_list_and_detail(client: TestClient) -> None:
    listed = client.get("/api/challenges").json()
    assert [c["slug"] for c in listed][: len(SLUGS)] == SLUGS  # the first six, then the newer ones
    detail = client.get("/api/challenges/decode-step").json()
    assert detail["entry_point"] == "step" and detail["prompt"] and detail["starter_code"]
    assert client.get("/api/challenges/nope").status_code == 404
    assert client.get("/challenges").status_code == 200
    assert client.get("/challenges/gqa-attention").status_code == 200


@pytest.mark.parametrize("slug", SERVING)
def test_the_serving_challenges_are_listed_and_served(client: TestClient, slug: str) -> None:
    listed = {c["slug"]: c for c in client.get("/api/challenges").json()}
    assert slug in listed
    detail = client.get(f"/api/challenges/{slug}").json()
    assert detail["prompt"] and detail["starter_code"] and detail["entry_point"]
    page = client.get("/challenges", headers={"Accept": "text/html"}).text
    assert f'href="/challenges/{slug}"' in page and listed[slug]["title"].split(":")[0] in page
    assert client.get(f"/challenges/{slug}").status_code == 200


@pytest.mark.parametrize("slug", ["fix-causal-attention", "kv-cache-bytes"])
def test_wrong_then_right_submission(grading_client: TestClient, slug: str) -> None:
    starter = (CHALLENGES / slug / "starter.py").read_text()
    solution = (CHALLENGES / slug / "solution.py").read_text()

    assert grading_client.get(f"/api/challenges/{slug}/solution").status_code == 403
    response = grading_client.post(f"/api/challenges/{slug}/submissions", json={"code": starter})
    assert response.status_code == 202
    queued = response.json()
    assert queued["status"] in {"queued", "running", "done"} and queued["id"]
    wrong = wait_for_verdict(grading_client, queued["id"])
    assert wrong["verdict"] == "failed" and wrong["challenge"] == slug
    assert any(not t["passed"] and t["message"] for t in wrong["tests"])

    right_id = grading_client.post(f"/api/challenges/{slug}/submissions", json={"code": solution}).json()[
        "id"
    ]
    right = wait_for_verdict(grading_client, right_id)
    assert right["verdict"] == "passed", right
    assert all(t["passed"] for t in right["tests"]) and right["duration_ms"] >= 0

    history = grading_client.get(f"/api/challenges/{slug}/submissions").json()
    assert [h["verdict"] for h in history] == ["passed", "failed"]
    assert grading_client.get(f"/api/challenges/{slug}/solution").json()["solution"] == solution


def test_someone_elses_submission_is_404(grading_client: TestClient) -> None:
    sid = grading_client.post("/api/challenges/kv-cache-bytes/submissions", json={"code": "x = 1"}).json()[
        "id"
    ]
    grading_client.cookies.clear()  # a different visitor
    assert grading_client.get(f"/api/submissions/{sid}").status_code == 404
    assert grading_client.get("/api/challenges/kv-cache-bytes/submissions").json() == []
    assert grading_client.get("/api/submissions/not-an-id").status_code == 404


@pytest.mark.parametrize(
    ("body", "headers", "status"),
    [
        ('{"code": 3}', {"content-type": "application/json"}, 422),
        ("{}", {"content-type": "application/json"}, 422),
        ('{"code": "x", "extra": 1}', {"content-type": "application/json"}, 422),
        ("not json", {"content-type": "application/json"}, 422),
        ('{"code": "x"}', {"content-type": "text/plain"}, 422),
    ],
)
def test_malformed_bodies_are_422(grading_client: TestClient, body: str, headers: dict, status: int) -> None:
    response = grading_client.post("/api/challenges/decode-step/submissions", content=body, headers=headers)
    assert response.status_code == status


def test_unknown_challenge_is_404_and_big_code_is_413(grading_client: TestClient) -> None:
    assert grading_client.post("/api/challenges/nope/submissions", json={"code": "x"}).status_code == 404
    big = "# " + "x" * (64 * 1024)
    assert (
        grading_client.post("/api/challenges/decode-step/submissions", json={"code": big}).status_code == 413
    )
    huge = "x" * (2 * 1024 * 1024)
    response = grading_client.post("/api/challenges/decode-step/submissions", json={"code": huge})
    assert response.status_code == 413


def test_submitting_too_fast_is_429_with_retry_after(grading_client: TestClient) -> None:
    codes = [
        grading_client.post("/api/challenges/kv-cache-bytes/submissions", json={"code": "x = 1"}).status_code
        for _ in range(6)
    ]
    assert codes == [202] * 5 + [429]
    response = grading_client.post("/api/challenges/kv-cache-bytes/submissions", json={"code": "x = 1"})
    assert response.status_code == 429 and int(response.headers["retry-after"]) >= 1


def test_verdicts_feed_spaced_repetition(grading_client: TestClient, db_url: str) -> None:
    from sqlmodel import Session, col, select

    from app.db import make_engine
    from app.models import Card, CardProgress, Review

    slug = "kv-cache-bytes"
    solution = (CHALLENGES / slug / "solution.py").read_text()
    wrong_id = submit(grading_client, slug, "x = 1")
    assert wait_for_verdict(grading_client, wrong_id)["verdict"] == "error"
    right_id = grading_client.post(f"/api/challenges/{slug}/submissions", json={"code": solution}).json()[
        "id"
    ]
    assert wait_for_verdict(grading_client, right_id)["verdict"] == "passed"

    engine = make_engine(db_url)
    with Session(engine) as session:
        concept_cards = {
            c.id
            for c in session.exec(
                select(Card).where(Card.topic.in_(["kv-memory", "mha-mqa-gqa"]), col(Card.retired).is_(False))
            ).all()
        }  # a retired card (superseded_by) is reviewed through the card that replaced it, not itself
        reviewed = {r.card_id for r in session.exec(select(Review).where(Review.source == "challenge")).all()}
        progress = {p.card_id for p in session.exec(select(CardProgress)).all()}
    engine.dispose()
    assert concept_cards and concept_cards <= reviewed <= progress


@pytest.mark.sandbox
def test_grading_through_redis(db_url: str) -> None:
    """With REDIS_URL the same task goes through Redis, as `kvprep worker` machines would share it."""
    import secrets

    settings = Settings(
        database_url=db_url,
        redis_url="redis://127.0.0.1:6379/0",
        queue_name=f"kvprep-test-{secrets.token_hex(4)}",
        grading_workers=1,
    )
    app = create_app(settings)
    with TestClient(app) as client:
        assert type(app.state.grading.huey).__name__ == "RedisHuey"
        solution = (CHALLENGES / "kv-cache-bytes" / "solution.py").read_text()
        assert wait_for_verdict(client, submit(client, "kv-cache-bytes", solution))["verdict"] == "passed"
        app.state.grading.huey.flush()


def test_long_poll_answers_with_the_verdict_once_stored(grading_client: TestClient) -> None:
    code = (CHALLENGES / "decode-step" / "solution.py").read_text()
    submission_id = submit(grading_client, "decode-step", code)
    # One request that waits: no polling loop, and it comes back with the verdict itself.
    done = grading_client.get(f"/api/submissions/{submission_id}", params={"wait": 30}).json()
    assert done["status"] == "done" and done["verdict"] == "passed" and done["id"] == submission_id
    # Already done: answered at once, the same verdict; a bad wait is a 422; a stranger gets 404.
    again = grading_client.get(f"/api/submissions/{submission_id}", params={"wait": 5}).json()
    assert again == done
    assert grading_client.get(f"/api/submissions/{submission_id}", params={"wait": 31}).status_code == 422
    assert grading_client.get(f"/api/submissions/{submission_id}", params={"wait": -1}).status_code == 422
    grading_client.cookies.clear()
    assert grading_client.get(f"/api/submissions/{submission_id}", params={"wait": 1}).status_code == 404

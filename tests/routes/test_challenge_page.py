"""The challenge page's routes: past attempts with their code and score, the last verdict after a
reload, the list's standings, and the typed verdict JSON that stays CONTRACT.md's key for key."""

from __future__ import annotations

import json
import re

from fastapi.testclient import TestClient

from tests.routes.test_submissions import CHALLENGES, submit, wait_for_verdict

SLUG = "kv-cache-bytes"
SOLUTION = (CHALLENGES / SLUG / "solution.py").read_text()
STARTER = (CHALLENGES / SLUG / "starter.py").read_text()
VERDICT_KEYS = ["challenge", "verdict", "tests", "diagnosis", "duration_ms", "id", "status"]


def last_submission(page: str) -> object:
    found = re.search(r'<script id="last-submission" type="application/json">(.*?)</script>', page, re.S)
    assert found is not None, "the page carries no last submission"
    return json.loads(found.group(1))


def standing(page: str, slug: str) -> str:
    found = re.search(rf'<li class="card-item" data-slug="{slug}">(.*?)</li>', page, re.S)
    assert found is not None
    return " ".join(found.group(1).split())


def test_verdict_json_keeps_the_contract_keys_in_order(grading_client: TestClient) -> None:
    queued = grading_client.post(f"/api/challenges/{SLUG}/submissions", json={"code": SOLUTION})
    assert queued.status_code == 202 and list(queued.json()) == ["id", "status"]
    done = wait_for_verdict(grading_client, queued.json()["id"])
    assert list(done) == VERDICT_KEYS, list(done)  # no "output" key when nothing was printed
    assert all(list(t) == ["name", "passed", "message"] for t in done["tests"])
    printed = submit(grading_client, SLUG, 'print("hello from the submission")\n' + SOLUTION)
    assert "output" in wait_for_verdict(grading_client, printed)


def test_attempts_list_their_score_and_open_with_their_code(grading_client: TestClient) -> None:
    wrong = submit(grading_client, SLUG, STARTER)
    wrong_verdict = wait_for_verdict(grading_client, wrong)
    right = submit(grading_client, SLUG, SOLUTION)
    wait_for_verdict(grading_client, right)

    history = grading_client.get(f"/api/challenges/{SLUG}/submissions").json()
    assert [h["id"] for h in history] == [right, wrong]
    passed_wrong = sum(t["passed"] for t in wrong_verdict["tests"])
    assert history[1]["tests_passed"] == passed_wrong
    assert history[1]["tests_total"] == len(wrong_verdict["tests"])
    assert history[0]["tests_passed"] == history[0]["tests_total"] > 0

    code = grading_client.get(f"/api/submissions/{wrong}/code").json()
    assert code["code"] == STARTER and code["challenge"] == SLUG and code["id"] == wrong
    grading_client.cookies.clear()  # a stranger, or a missing id: the same 404
    assert grading_client.get(f"/api/submissions/{wrong}/code").status_code == 404
    assert grading_client.get("/api/submissions/nope/code").status_code == 404


def test_the_page_shows_the_last_verdict_after_a_reload(grading_client: TestClient) -> None:
    page = grading_client.get(f"/challenges/{SLUG}")
    assert last_submission(page.text) is None and "No attempt yet." in page.text
    submission_id = submit(grading_client, SLUG, STARTER)
    verdict = wait_for_verdict(grading_client, submission_id)

    page = grading_client.get(f"/challenges/{SLUG}").text
    assert last_submission(page) == verdict  # the verdict JSON itself, as the API answers it
    assert f'data-id="{submission_id}"' in page
    passed = sum(t["passed"] for t in verdict["tests"])
    assert f"{passed}/{len(verdict['tests'])} passed" in page
    # Another challenge's page carries nothing of it.
    assert last_submission(grading_client.get("/challenges/decode-step").text) is None


def test_a_submission_still_grading_is_shown_as_such(client: TestClient) -> None:
    """Without grading workers the submission stays queued: the page hands it to the script to poll."""
    submission_id = submit(client, SLUG, SOLUTION)
    page = client.get(f"/challenges/{SLUG}").text
    assert last_submission(page) == {"id": submission_id, "status": "queued"}


def test_the_list_shows_attempted_then_passed(grading_client: TestClient) -> None:
    page = grading_client.get("/challenges").text
    assert "attempted" not in standing(page, SLUG) and "passed" not in standing(page, SLUG)
    wait_for_verdict(grading_client, submit(grading_client, SLUG, STARTER))
    page = grading_client.get("/challenges").text
    assert "attempted" in standing(page, SLUG) and "1 attempt" in standing(page, SLUG)
    assert "attempted" not in standing(page, "decode-step")
    wait_for_verdict(grading_client, submit(grading_client, SLUG, SOLUTION))
    page = grading_client.get("/challenges").text
    assert "passed" in standing(page, SLUG) and "2 attempts" in standing(page, SLUG)
    assert "attempted" not in standing(page, SLUG)


def test_unknown_challenge_is_404_before_the_size_check(grading_client: TestClient) -> None:
    big = "x" * (80 * 1024)
    assert grading_client.post("/api/challenges/nope/submissions", json={"code": big}).status_code == 404
    assert grading_client.post(f"/api/challenges/{SLUG}/submissions", json={"code": big}).status_code == 413


def test_docs_name_the_challenge_and_submission_models(client: TestClient) -> None:
    schema = client.get("/openapi.json").json()

    def response_ref(path: str, method: str, status: str) -> str:
        content = schema["paths"][path][method]["responses"][status]["content"]["application/json"]
        return json.dumps(content["schema"])

    assert "ChallengeSummary" in response_ref("/api/challenges", "get", "200")
    assert "ChallengePublic" in response_ref("/api/challenges/{slug}", "get", "200")
    assert "ChallengeSolution" in response_ref("/api/challenges/{slug}/solution", "get", "200")
    assert "SubmissionSummary" in response_ref("/api/challenges/{slug}/submissions", "get", "200")
    assert "SubmissionPublic" in response_ref("/api/challenges/{slug}/submissions", "post", "202")
    assert "SubmissionPublic" in response_ref("/api/submissions/{submission_id}", "get", "200")
    assert "SubmissionCode" in response_ref("/api/submissions/{submission_id}/code", "get", "200")
    statuses = schema["components"]["schemas"]["SubmissionStatus"]["enum"]
    assert statuses == ["queued", "running", "done"]

"""Mock interviews over HTTP: the server's clock (409 after the deadline, reloads keep the time),
ownership, the HTML flow with CSRF, the shared report, guests signing up, and real grading."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session, select

from app.config import ROOT
from app.db import make_engine
from app.main import create_app
from app.models import MockItem
from app.services.clock import ManualClock
from graders.runner import shutdown as shutdown_sandbox
from tests.routes.conftest import MOCK_START
from tests.services.factories import BODYLESS, csrf, fast_settings, other_client, signup

START = MOCK_START


def start(client: TestClient, **body: object) -> dict:
    response = client.post("/api/mock", json={"minutes": 15, "with_challenge": False} | body)
    assert response.status_code == 201, response.text
    return response.json()


def reply(client: TestClient, state: dict, text: str = "keys and values") -> dict:
    """Answer the current step, whatever its kind."""
    current = state["current"]
    body: dict[str, object] = {"position": current["position"], "step": current["step"], "text": text}
    if current["step"] == "question" and current["kind"] == "numeric":
        body |= {"value": "1", "unit": current["numeric"]["unit"]}
    if current["step"] == "question" and current["kind"] == "choice":
        body["picked"] = [0]
    response = client.post(f"/api/mock/{state['id']}/answers", json=body)
    assert response.status_code == 200, response.text
    return response.json()


def remaining_on_page(client: TestClient, mock_id: int) -> tuple[float, str]:
    page = client.get(f"/mock/{mock_id}").text
    remaining = re.search(r'data-remaining="([\d.]+)"', page)
    shown = re.search(r'id="clock"[^>]*>([^<]+)<', page)
    assert remaining and shown
    return float(remaining.group(1)), shown.group(1)


def test_an_answer_one_second_after_the_deadline_is_refused(
    app_client: TestClient, clock: ManualClock
) -> None:
    state = start(app_client)
    clock.advance(15 * 60 - 1)  # one second left: still accepted
    state = reply(app_client, state)
    assert state["status"] == "running" and state["remaining_s"] == 1
    clock.advance(2)  # one second past the deadline
    current = state["current"]
    response = app_client.post(
        f"/api/mock/{state['id']}/answers",
        json={"position": current["position"], "step": current["step"], "text": "too late"},
    )
    assert response.status_code == 409
    assert response.json()["detail"].startswith("Time is up: the interview ended at 09:15:00 UTC")
    after = app_client.get(f"/api/mock/{state['id']}").json()
    assert after["status"] == "ended" and after["ended_by"] == "deadline" and after["remaining_s"] == 0
    assert after["ended_at"] == "2026-03-02T09:15:00+00:00" and after["current"] is None
    # Code after the deadline is refused too, and the report is there.
    assert app_client.post(f"/api/mock/{state['id']}/submissions", json={"code": "x"}).status_code == 409
    assert app_client.get(f"/api/mock/{state['id']}/report").status_code == 200


def test_a_form_answer_after_the_deadline_says_so(app_client: TestClient, clock: ManualClock) -> None:
    state = start(app_client)
    token = csrf(app_client, f"/mock/{state['id']}")
    clock.advance(15 * 60 + 1)
    response = app_client.post(
        f"/mock/{state['id']}/answer",
        data={"csrf_token": token, "position": "0", "step": "question", "text": "late"},
        follow_redirects=False,
    )
    assert response.status_code == 303
    page = app_client.get(response.headers["location"]).text
    assert "Time is up" in page and "Score your answers" in page


def test_a_reload_and_a_second_tab_keep_the_remaining_time(
    app_client: TestClient, clock: ManualClock
) -> None:
    state = start(app_client)
    assert remaining_on_page(app_client, state["id"]) == (900.0, "15:00")
    clock.advance(125)
    assert remaining_on_page(app_client, state["id"]) == (775.0, "12:55")  # a reload: the clock kept running
    assert app_client.get(f"/api/mock/{state['id']}").json()["remaining_s"] == 775
    second_tab = TestClient(app_client.app, cookies=app_client.cookies)
    assert remaining_on_page(second_tab, state["id"]) == (775.0, "12:55")
    # The second tab answers; the first tab's stale answer is refused, not counted twice.
    reply(second_tab, state)
    response = app_client.post(
        f"/api/mock/{state['id']}/answers", json={"position": 0, "step": "question", "text": "again"}
    )
    assert response.status_code == 409 and "moved on" in response.json()["detail"]


def test_no_pausing_and_one_interview_at_a_time(app_client: TestClient, clock: ManualClock) -> None:
    state = start(app_client)
    response = app_client.post("/api/mock", json={"minutes": 30})
    assert (
        response.status_code == 409 and "already have a mock interview running" in response.json()["detail"]
    )
    finished = app_client.post(f"/api/mock/{state['id']}/finish", headers=BODYLESS).json()
    assert finished["status"] == "ended" and finished["ended_by"] == "user"
    assert app_client.post(f"/api/mock/{state['id']}/finish", headers=BODYLESS).status_code == 409
    start(app_client)  # the clock stopped, so a new one may start


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({"minutes": 0}, 422),
        ({"minutes": 500}, 422),
        ({"minutes": 15, "topics": ["nope"]}, 422),
        ({"minutes": 15, "topics": ["../x"]}, 422),
        ({"minutes": 15, "difficulty": "trivial"}, 422),
        ({"minutes": 15, "extra": 1}, 422),
        ({"minutes": "soon"}, 422),
    ],
)
def test_bad_set_ups_are_422(app_client: TestClient, body: dict, status: int) -> None:
    assert app_client.post("/api/mock", json=body).status_code == status


def test_someone_elses_interview_is_404(app_client: TestClient) -> None:
    state = start(app_client)
    stranger = other_client(app_client)
    mock_id = state["id"]
    assert stranger.get(f"/api/mock/{mock_id}").status_code == 404
    assert stranger.get(f"/mock/{mock_id}", headers={"accept": "text/html"}).status_code == 404
    assert stranger.post(f"/api/mock/{mock_id}/answers", json={"position": 0}).status_code == 404
    assert stranger.post(f"/api/mock/{mock_id}/finish", headers=BODYLESS).status_code == 404
    assert stranger.post(f"/api/mock/{mock_id}/share", headers=BODYLESS).status_code == 404
    assert stranger.get("/api/mock").json() == []
    assert app_client.get("/api/mock/999999").status_code == 404


def test_the_whole_interview_through_the_pages(app_client: TestClient, clock: ManualClock) -> None:
    assert app_client.get("/mock").status_code == 200
    token = csrf(app_client, "/mock")
    form = {
        "length": "custom",
        "custom_minutes": "9",
        "topics": ["rope"],
        "difficulty": "",
        "csrf_token": token,
    }
    assert app_client.post("/mock", data=form | {"csrf_token": ""}).status_code == 403
    bad = app_client.post("/mock", data=form | {"custom_minutes": "0"})
    assert bad.status_code == 422 and "whole number from 1 to 120" in bad.text
    response = app_client.post("/mock", data=form, follow_redirects=False)
    assert response.status_code == 303
    url = response.headers["location"]
    again = app_client.post("/mock", data=form, follow_redirects=False)  # one runs already: back to it
    assert again.status_code == 303 and again.headers["location"] == url

    page = app_client.get(url).text
    assert "Question 1 of 2" in page and "9:00" in page and "Interviewer" in page
    clock.advance(40)
    app_client.post(url + "/answer", data={"csrf_token": token, "position": "0", "step": "question",
                                           "text": "RoPE rotates query and key pairs"})  # fmt: skip
    page = app_client.get(url).text
    assert "digging deeper" in page and "RoPE rotates query and key pairs" in page
    clock.advance(20)
    app_client.post(
        url + "/answer", data={"csrf_token": token, "position": "0", "step": "follow_up", "skip": "1"}
    )
    assert "Question 2 of 2" in app_client.get(url).text
    app_client.post(url + "/finish", data={"csrf_token": token})

    page = app_client.get(url).text
    assert "Score your answers" in page and "You ended the interview after 1 min 0 s" in page
    assert 'name="kp-0"' in page and 'name="fu-0"' in page
    app_client.post(url + "/score", data={"csrf_token": token, "kp-0": ["0", "1"], "fu-0": "1"})
    report = app_client.get(url).text
    assert "Your report" in report and "Score per topic" in report and "What to review" in report
    assert "Time: 1:00 (answer 0:40, follow-up 0:20)" in report
    assert 'href="/cards/' in report and "Create a read-only link" in report
    listed = app_client.get("/api/mock").json()
    assert listed[0]["status"] == "scored" and listed[0]["score"] is not None
    assert "Report" in app_client.get("/mock").text


def every_key(value: object) -> set[str]:
    """The keys of every object nested in a JSON document."""
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in every_key(v)}
    if isinstance(value, list):
        return {k for v in value for k in every_key(v)}
    return set()


def secret_interview(client: TestClient, clock: ManualClock, text: str) -> dict:
    state = start(client, topics=["rope"], minutes=9)
    while state["current"]:
        clock.advance(10)
        state = reply(client, state, text)
    return state


def test_a_shared_report_shows_the_report_and_nothing_of_its_owner(
    app_client: TestClient, clock: ManualClock, db_url: str
) -> None:
    owner = signup(app_client, "owner.secret@example.com")
    other = secret_interview(app_client, clock, "OTHER-INTERVIEW-ANSWER")
    app_client.post(f"/api/mock/{other['id']}/score", json={"items": []})
    clock.advance(600)
    shared = start(app_client, topics=["rope"], minutes=9, with_challenge=True)
    while shared["current"]["kind"] != "challenge":
        clock.advance(10)
        shared = reply(app_client, shared, "SHARED-INTERVIEW-ANSWER")
    # Code inside this interview, and code submitted outside any interview.
    inside = app_client.post(f"/api/mock/{shared['id']}/submissions", json={"code": "INSIDE_CODE = 1"})
    assert inside.status_code == 202
    slug = shared["current"]["challenge"]["slug"]
    assert (
        app_client.post(f"/api/challenges/{slug}/submissions", json={"code": "OUTSIDE_CODE = 1"}).status_code
        == 202
    )
    assert (
        app_client.post(f"/api/mock/{shared['id']}/score", json={"items": []}).status_code == 409
    )  # running
    app_client.post(f"/api/mock/{shared['id']}/finish", headers=BODYLESS)
    scored = app_client.post(
        f"/api/mock/{shared['id']}/score", json={"items": [{"position": 0, "key_points": [0]}]}
    )
    assert scored.status_code == 200
    link = app_client.post(f"/api/mock/{shared['id']}/share", headers=BODYLESS).json()
    token = link["token"]
    assert link["url"].endswith(f"/mock/shared/{token}") and len(token) >= 32

    visitor = other_client(app_client)
    page = visitor.get(f"/mock/shared/{token}")
    assert page.status_code == 200
    assert page.headers["referrer-policy"] == "no-referrer" and "noindex" in page.headers["x-robots-tag"]
    text = page.text
    assert "SHARED-INTERVIEW-ANSWER" in text and "Score per topic" in text and "INSIDE_CODE" in text
    for secret in ["owner.secret", "OTHER-INTERVIEW-ANSWER", "OUTSIDE_CODE", f"/mock/{shared['id']}",
                   f"/mock/{other['id']}", "csrf_token\" value", "Revoke", "due again"]:  # fmt: skip
        assert secret not in text, secret
    as_json = visitor.get(f"/api/mock/shared/{token}")
    assert as_json.status_code == 200
    flat = as_json.text
    assert "SHARED-INTERVIEW-ANSWER" in flat
    for key in ['"user_id"', '"id"', '"email"', "owner.secret", "OTHER-INTERVIEW-ANSWER", "OUTSIDE_CODE"]:
        assert key not in flat, key
    # No field anywhere in the document names the owner (a key check: the owner's id as a value
    # would collide with any count that happens to equal it), and their address is nowhere.
    keys = every_key(as_json.json())
    assert not {k for k in keys if k in {"id", "user", "owner"} or "email" in k or k.endswith("user_id")}, (
        keys
    )
    assert owner["email"] not in flat and owner["email"].split("@")[0] not in flat

    # The owner revokes the link: it is gone for everyone.
    assert app_client.delete(f"/api/mock/{shared['id']}/share", headers=BODYLESS).status_code == 204
    revoked = visitor.get(f"/mock/shared/{token}", headers={"accept": "text/html"})
    assert revoked.status_code == 410 and "revoked" in revoked.text  # says why, shows nothing
    assert visitor.get(f"/api/mock/shared/{token}").status_code == 410
    assert visitor.get("/mock/shared/not-a-token").status_code == 404


def test_the_share_link_from_the_report_page(app_client: TestClient, clock: ManualClock) -> None:
    state = secret_interview(app_client, clock, "whatever")
    url = f"/mock/{state['id']}"
    token = csrf(app_client, url)
    app_client.post(url + "/score", data={"csrf_token": token})
    app_client.post(url + "/share", data={"csrf_token": token})
    page = app_client.get(url).text
    shared_url = re.search(r'value="(http[^"]+/mock/shared/[^"]+)"', page)
    assert shared_url
    assert other_client(app_client).get(shared_url.group(1)).status_code == 200
    app_client.post(url + "/unshare", data={"csrf_token": token})
    assert other_client(app_client).get(shared_url.group(1)).status_code == 410
    assert "Create a read-only link" in app_client.get(url).text


def test_a_guests_interviews_follow_them_into_an_account(app_client: TestClient, clock: ManualClock) -> None:
    account = other_client(app_client)
    signup(account, "a@example.com")
    state = secret_interview(app_client, clock, "guest answer")
    # Signing up keeps them; so does logging in to an existing account (the merge).
    newcomer = other_client(app_client)
    mine = secret_interview(newcomer, clock, "newcomer answer")
    signup(newcomer, "new@example.com")
    assert [m["id"] for m in newcomer.get("/api/mock").json()] == [mine["id"]]
    response = app_client.post(
        "/api/auth/login", json={"email": "a@example.com", "password": "correct horse battery"}
    )
    assert response.status_code == 200
    assert [m["id"] for m in app_client.get("/api/mock").json()] == [state["id"]]
    assert app_client.get(f"/mock/{state['id']}").status_code == 200


@pytest.fixture
def grading_client(db_url: str, clock: ManualClock) -> Iterator[TestClient]:
    app = create_app(fast_settings(db_url, grading_workers=1, embedded_queue="memory"))
    with TestClient(app) as client:
        clock.set(datetime.now(UTC))
        app.state.clock = clock
        yield client
    shutdown_sandbox()  # the fork server the worker started: later tests start without one


def test_the_coding_problem_is_graded_inside_the_clock(
    grading_client: TestClient, clock: ManualClock, db_url: str
) -> None:
    state = start(grading_client, minutes=5, topics=["kv-memory"], with_challenge=True)
    while state["current"]["kind"] != "challenge":
        state = reply(grading_client, state)
    engine = make_engine(db_url)
    with Session(engine) as session:  # the challenge drawn is random: make it the quick one
        item = session.get(MockItem, _challenge_item_id(session, state["id"]))
        item.challenge = "kv-cache-bytes"
        session.add(item)
        session.commit()
    engine.dispose()
    solution = (ROOT / "questions" / "challenges" / "kv-cache-bytes" / "solution.py").read_text()
    queued = grading_client.post(f"/api/mock/{state['id']}/submissions", json={"code": solution})
    assert queued.status_code == 202
    deadline = time.monotonic() + 60
    while grading_client.get(f"/api/submissions/{queued.json()['id']}").json()["status"] != "done":
        assert time.monotonic() < deadline, "no verdict"
        time.sleep(0.05)
    clock.advance(5 * 60)  # the deadline: the interview closes itself
    report = grading_client.post(f"/api/mock/{state['id']}/score", json={"items": []}).json()
    coding = report["items"][-1]
    assert coding["kind"] == "challenge" and coding["challenge"]["verdict"] == "passed"
    assert coding["score"] == 1 and report["ended_by"] == "deadline"
    assert not [r for r in report["review"] if r["kind"] == "challenge"]


def _challenge_item_id(session: Session, mock_id: int) -> int:
    item = session.exec(
        select(MockItem).where(MockItem.interview_id == mock_id, MockItem.kind == "challenge")
    ).one()
    assert item.id is not None
    return item.id

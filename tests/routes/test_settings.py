"""/settings: the retention target and interview date (kept on error), review counts, and personal
FSRS parameters fitted on request, used from then on, reset on request; each user's own."""

from __future__ import annotations

import html
import re
from datetime import UTC, datetime, timedelta

import pytest
from fastapi.testclient import TestClient
from fsrs.scheduler import DEFAULT_PARAMETERS
from sqlmodel import Session, select

from app.config import Settings
from app.models import FsrsFit, User
from app.services import personal_fsrs
from tests.services.factories import BODYLESS, csrf, fast_settings, other_client, signup
from tests.services.fsrs_logs import add_review_log

# Valid parameters unlike the defaults: the route tests need a fit's outcome, not the optimizer's minute.
FITTED = [round(p * 1.1, 4) if i in (0, 1, 2, 3) else p for i, p in enumerate(DEFAULT_PARAMETERS)]


@pytest.fixture
def settings(db_url: str) -> Settings:
    return fast_settings(db_url)


def user_id(client: TestClient) -> int:
    return int(client.get("/api/account").json()["id"])


def text(client: TestClient, path: str) -> str:
    response = client.get(path)
    assert response.status_code == 200, path
    return html.unescape(response.text)


def test_the_page_says_how_far_from_a_fit_a_new_user_is(client: TestClient) -> None:
    page = client.get("/settings")
    assert page.status_code == 200
    assert "FSRS's defaults" in html.unescape(page.text) and "Too few reviews to fit yet" in page.text
    assert re.search(r'<button type="submit" class="primary" id="fit" disabled', page.text)
    assert "<strong>512 more</strong>" in page.text
    data = client.get("/api/settings/scheduling").json()
    assert data["personal"] is False and data["reviews"] == 0 and data["reviews_needed"] == 512
    assert data["parameters"] == list(DEFAULT_PARAMETERS) and data["threshold"] == 512
    # A visitor's refused fit: said beside the button, no row made.
    refused = client.post("/api/settings/scheduling/fit", headers=BODYLESS)
    assert refused.status_code == 409 and "512 more to go" in refused.text
    page = client.post("/settings/fit", data={"csrf_token": csrf(client, "/settings")})
    assert page.status_code == 409 and 'id="fit-error"' in page.text and "512 more to go" in page.text


def test_study_settings_are_checked_and_kept_when_refused(client: TestClient) -> None:
    token = csrf(client, "/settings")
    past = (datetime.now(UTC).date() - timedelta(days=2)).isoformat()
    bad = client.post("/settings", data={"csrf_token": token, "retention": "101", "interview_date": past})
    assert bad.status_code == 422
    assert "between 70% and 99%" in bad.text and "That day has passed" in bad.text
    assert 'value="101"' in bad.text and f'value="{past}"' in bad.text  # what was typed stays
    assert 'aria-invalid="true" aria-describedby="retention-error"' in bad.text
    assert client.get("/api/account").json()["desired_retention"] == 0.9  # nothing saved

    interview = (datetime.now(UTC).date() + timedelta(days=10)).isoformat()
    saved = client.post(
        "/settings", data={"csrf_token": token, "retention": "85", "interview_date": interview}
    )
    assert saved.status_code == 200 and "Settings saved." in saved.text
    assert client.get("/api/account").json()["desired_retention"] == 0.85
    # Where they act: beside the due counts on the quiz page and the dashboard.
    for path in ("/quiz", "/progress", "/settings"):
        line = re.search(r'<p class="schedule-line[^>]*>(.*?)</p>', text(client, path), re.S)
        assert line, path
        said = " ".join(line.group(1).split())
        assert "85% recall" in said and interview in said and "in 10 days" in said, (path, said)
        assert "FSRS's default parameters" in said


def test_a_fit_is_queued_used_from_then_on_and_reset(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    signup(client, "a@example.com")
    me = user_id(client)
    engine = client.app.state.engine  # type: ignore[attr-defined]
    with Session(engine) as session:
        after = add_review_log(session, me, cards=100, reviews_per_card=7)
    page = client.get("/settings").text
    assert "<strong>700</strong> in all" in page and "<strong>600</strong>" in page
    assert "Too few reviews" not in page and not re.search(r'id="fit" disabled', page)

    queued = client.post("/api/settings/scheduling/fit", headers=BODYLESS)
    assert queued.status_code == 202, queued.text
    assert queued.json()["fit_pending"] is True and queued.json()["fit"]["status"] == "queued"
    assert client.post("/api/settings/scheduling/fit", headers=BODYLESS).status_code == 409
    assert "Fitting your parameters" in client.get("/settings").text

    monkeypatch.setattr(personal_fsrs, "fit_parameters", lambda logs: list(FITTED))
    with Session(engine) as session:
        fit = session.exec(select(FsrsFit)).one()
    personal_fsrs.run_fit(engine, fit.id)  # what the queue's worker starts in its child
    data = client.get("/api/settings/scheduling").json()
    assert data["personal"] is True and data["parameters"] == FITTED and data["fit"]["status"] == "done"
    assert "<strong>Personal</strong>: fitted to your reviews (600 of them" in client.get("/settings").text
    assert "parameters fitted to your reviews" in text(client, "/quiz")
    assert after  # the log ends before now: the fitted parameters schedule what comes next
    quiz = client.post("/api/quizzes", json={"topics": ["rope"], "size": 1, "kinds": ["recall"]}).json()
    base = f"/api/quizzes/{quiz['id']}/items/0"
    client.post(base + "/answer", json={})
    client.post(base + "/rate", json={"rating": "good"})
    with Session(engine) as session:
        user = session.get(User, me)
        assert user is not None and user.fsrs_parameters == FITTED

    # Someone else sees their own defaults, and cannot reset mine.
    other = other_client(client)
    assert other.get("/api/settings/scheduling").json()["personal"] is False
    assert other.delete("/api/settings/scheduling/parameters", headers=BODYLESS).json()["personal"] is False
    assert client.get("/api/settings/scheduling").json()["personal"] is True

    reset = client.post("/settings/reset", data={"csrf_token": csrf(client, "/settings")})
    assert reset.status_code == 200 and "Back to FSRS's default parameters." in html.unescape(reset.text)
    assert client.get("/api/settings/scheduling").json()["parameters"] == list(DEFAULT_PARAMETERS)


def test_settings_are_linked_from_the_account_and_progress_pages(client: TestClient) -> None:
    assert 'href="/settings"' in client.get("/account").text
    assert 'href="/settings"' in client.get("/progress").text
    assert 'href="/settings"' in client.get("/quiz").text


def test_the_forms_need_their_csrf_token(client: TestClient) -> None:
    for path in ("/settings", "/settings/fit", "/settings/reset"):
        assert client.post(path, data={"retention": "80"}).status_code == 403, path

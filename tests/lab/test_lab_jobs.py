"""Lab runs through the queue: the API queues, a child process runs, progress and results come back."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session

from app.config import ROOT, Settings
from app.db import make_engine
from app.lab.jobs import is_stale
from app.main import create_app
from app.models import LabRun, utcnow


def _client(db_url: str, tmp_path: Path, workers: int) -> TestClient:
    settings = Settings(
        database_url=db_url,
        content_root=ROOT / "questions",
        grading_workers=workers,
        embedded_queue="memory",
        lab_lock_file=tmp_path / "lab.lock",
        lab_runs_per_hour=3,
    )
    return TestClient(create_app(settings))


@pytest.fixture
def lab_client(db_url: str, tmp_path: Path) -> Iterator[TestClient]:
    with _client(db_url, tmp_path, workers=1) as client:
        yield client


@pytest.fixture
def idle_client(db_url: str, tmp_path: Path) -> Iterator[TestClient]:
    """No queue workers: runs stay queued (nothing is started), for what the request alone decides."""
    with _client(db_url, tmp_path, workers=0) as client:
        yield client


def wait_done(client: TestClient, run_id: str, timeout: float = 60) -> dict:  # type: ignore[type-arg]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run = client.get(f"/api/lab/runs/{run_id}").json()
        if run["status"] in ("done", "failed"):
            return run  # type: ignore[no-any-return]
        time.sleep(0.1)
    raise AssertionError(f"lab run {run_id} did not finish: {run}")


def test_a_tiny_run_goes_through_the_queue_and_reports_results(lab_client: TestClient) -> None:
    r = lab_client.post("/api/lab/runs", json={"size": "tiny", "experiments": ["exactness", "cache_bytes"]})
    assert r.status_code == 202, r.text
    assert r.json()["status"] == "queued"
    run = wait_done(lab_client, r.json()["id"])
    assert run["status"] == "done", run
    ex = run["result"]["experiments"]
    assert list(ex) == ["exactness", "cache_bytes"]
    assert ex["exactness"]["checks"]["identical"] and ex["cache_bytes"]["checks"]["matches_formula"]
    assert run["result"]["threads"] == 1
    page = lab_client.get(f"/lab/runs/{run['id']}")
    assert "Identical, token for token." in page.text and "lab-result" in page.text
    assert any(item["id"] == run["id"] for item in lab_client.get("/api/lab/runs").json())


def test_two_runs_take_turns_on_one_machine(lab_client: TestClient) -> None:
    ids = [
        lab_client.post("/api/lab/runs", json={"size": "tiny", "experiments": ["prefill"]}).json()["id"]
        for _ in range(2)
    ]
    runs = [wait_done(lab_client, i) for i in ids]
    assert [r["status"] for r in runs] == ["done", "done"]
    engine = make_engine(lab_client.app.state.settings.database_url)  # type: ignore[attr-defined]
    with Session(engine) as session:
        rows = [session.get(LabRun, i) for i in ids]
        first, second = sorted(rows, key=lambda r: r.started_at)  # type: ignore[arg-type,return-value]
        # The lock file serialises them: the second got the machine only once the first was done.
        assert first.finished_at is not None and second.started_at is not None
        assert second.started_at >= first.finished_at
    engine.dispose()


def test_bad_requests_and_other_peoples_runs(idle_client: TestClient) -> None:
    assert idle_client.post("/api/lab/runs", json={"size": "huge"}).status_code == 422
    r = idle_client.post("/api/lab/runs", json={"size": "tiny", "experiments": ["warp-drive"]})
    assert r.status_code == 422 and "warp-drive" in r.text
    body = {"size": "tiny", "experiments": ["cache_bytes"]}
    run_id = idle_client.post("/api/lab/runs", json=body).json()["id"]
    assert idle_client.get(f"/api/lab/runs/{run_id}").json()["status"] == "queued"
    assert 'id="lab-progress"' in idle_client.get(f"/lab/runs/{run_id}").text
    with TestClient(idle_client.app) as stranger:  # a fresh client: another guest
        assert stranger.get(f"/api/lab/runs/{run_id}").status_code == 404
        assert stranger.get(f"/lab/runs/{run_id}").status_code == 404


def test_the_lab_is_rate_limited_per_user(idle_client: TestClient) -> None:
    codes = [
        idle_client.post("/api/lab/runs", json={"size": "tiny", "experiments": ["cache_bytes"]}).status_code
        for _ in range(4)
    ]
    assert codes == [202, 202, 202, 429]


def test_a_run_that_stopped_reporting_is_shown_failed() -> None:
    settings = Settings(lab_stale_s=60)
    old = utcnow() - timedelta(seconds=61)
    run = LabRun(id="x", user_id=1, size="tiny", status="running", heartbeat_at=old)
    assert is_stale(run, settings)
    run.heartbeat_at = utcnow()
    assert not is_stale(run, settings)
    run.status, run.heartbeat_at = "done", utcnow() - timedelta(days=1)
    assert not is_stale(run, settings)

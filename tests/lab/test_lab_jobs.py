"""Lab runs through the queue: the API queues, a child process runs, progress and results come back."""

from __future__ import annotations

import os
import signal
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


def _client(db_url: str, tmp_path: Path, workers: int, **overrides: object) -> TestClient:
    settings = Settings(
        database_url=db_url,
        content_root=ROOT / "questions",
        grading_workers=workers,
        embedded_queue="memory",
        lab_lock_file=tmp_path / "lab.lock",
        **{"lab_runs_per_hour": 3, "lab_max_pending_per_address": 4, "lab_poll_s": 0.2, **overrides},  # type: ignore[arg-type]
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


def test_guests_share_a_small_budget_per_address(idle_client: TestClient) -> None:
    codes = [
        idle_client.post("/api/lab/runs", json={"size": "tiny", "experiments": ["cache_bytes"]}).status_code
        for _ in range(4)
    ]
    assert codes == [202, 202, 202, 429]
    # A new cookie is no way around it: the budget is the address's.
    with TestClient(idle_client.app) as fresh:
        r = fresh.post("/api/lab/runs", json={"size": "tiny"})
        assert r.status_code == 429 and "sign in" in r.json()["detail"] and int(r.headers["Retry-After"]) > 0


def child_pids(parent: int) -> list[int]:
    """The pids of the `app.lab.child` processes whose parent is `parent` (read from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            cmdline = (entry / "cmdline").read_bytes()
        except (OSError, IndexError, ValueError):
            continue
        if ppid == parent and b"app.lab.child" in cmdline:
            found.append(int(entry.name))
    return found


def rss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def test_a_cookieless_flood_from_three_addresses_starts_one_child_at_a_time(
    db_url: str, tmp_path: Path
) -> None:
    """30 cookieless requests from 3 addresses: the caps admit a few, one child runs at a time."""
    with _client(db_url, tmp_path, workers=1, lab_max_pending=4, lab_max_pending_per_address=2) as client:
        app = client.app
        codes: list[int] = []
        ids: list[str] = []
        most_children, most_rss = 0, 0
        for index in range(30):
            address = f"10.0.0.{index % 3 + 1}"
            cookieless = TestClient(app, client=(address, 40000 + index))  # no `with`: no second lifespan
            r = cookieless.post("/api/lab/runs", json={"size": "tiny", "experiments": ["cache_bytes"]})
            codes.append(r.status_code)
            if r.status_code == 202:
                ids.append(r.json()["id"])
            children = child_pids(os.getpid())
            most_children = max(most_children, len(children))
        assert codes.count(202) <= 4 and set(codes) == {202, 429}, codes
        engine = make_engine(db_url)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            children = child_pids(os.getpid())
            most_children = max(most_children, len(children))
            most_rss = max(most_rss, sum(rss_kib(pid) for pid in children))
            with Session(engine) as session:
                statuses = [session.get(LabRun, i).status for i in ids]  # type: ignore[union-attr]
            if all(status in ("done", "failed") for status in statuses):
                break
            time.sleep(0.05)
        engine.dispose()
        assert statuses == ["done"] * len(ids), statuses
        assert most_children == 1  # the queue held the others as rows, not as processes
        assert app.state.lab.started == len(ids)  # type: ignore[attr-defined]
        assert most_rss < 1024 * 1024, most_rss  # one child's memory (KiB), not thirty


def test_a_child_killed_mid_run_fails_its_run_with_the_reason(lab_client: TestClient) -> None:
    r = lab_client.post("/api/lab/runs", json={"size": "full", "experiments": ["prefill"]})
    run_id = r.json()["id"]
    deadline = time.monotonic() + 60
    while not (children := child_pids(os.getpid())) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert children, "no lab child started"
    os.kill(children[0], signal.SIGKILL)
    run = wait_done(lab_client, run_id)
    assert run["status"] == "failed" and "SIGKILL" in run["error"], run


def test_runs_a_stopped_server_left_running_fail_at_start_and_children_end_with_it(
    db_url: str, tmp_path: Path
) -> None:
    with _client(db_url, tmp_path, workers=1) as client:
        run_id = client.post("/api/lab/runs", json={"size": "full", "experiments": ["prefill"]}).json()["id"]
        deadline = time.monotonic() + 60
        while not (children := child_pids(os.getpid())) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert children
    # The app stopped: its child is gone, and the run says why.
    time.sleep(0.2)
    assert not Path(f"/proc/{children[0]}").exists() or children[0] not in child_pids(os.getpid())
    engine = make_engine(db_url)
    try:
        with Session(engine) as session:
            run = session.get(LabRun, run_id)
            assert run is not None and run.status == "failed" and "server stopped" in (run.error or "")
            run.status, run.error = "running", None  # as a server killed with SIGKILL leaves it
            session.add(run)
            session.commit()
        with _client(db_url, tmp_path, workers=1):
            with Session(engine) as session:
                run = session.get(LabRun, run_id)
                assert run is not None and run.status == "failed" and "server stopped" in (run.error or "")
    finally:
        engine.dispose()  # a connection left to the garbage collector warns in a later test


def test_a_run_that_stopped_reporting_is_shown_failed() -> None:
    settings = Settings(lab_stale_s=60)
    old = utcnow() - timedelta(seconds=61)
    run = LabRun(id="x", user_id=1, size="tiny", status="running", heartbeat_at=old)
    assert is_stale(run, settings)
    run.heartbeat_at = utcnow()
    assert not is_stale(run, settings)
    run.status, run.heartbeat_at = "done", utcnow() - timedelta(days=1)
    assert not is_stale(run, settings)

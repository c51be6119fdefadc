"""Two `kvprep serve` processes from one checkout (issue 21, item 3), for real, on SQLite.

Left unset, the embedded queue file and the lab lock are named after the database a server
serves (Settings.derived_path). Two servers on one database therefore share them: one consumes
the queue and the other enqueues into it, and a submission made on the second is graded by the
first. A server of another database pointed at the same queue file refuses to start, saying
why, instead of enqueueing submissions nobody would grade.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2 as httpx
import pytest

from app.config import ROOT, Settings
from tests.test_scale_out import Cluster, free_port

pytestmark = pytest.mark.slow

SLUG = "kv-cache-bytes"
SOLUTION = (ROOT / "questions" / "challenges" / SLUG / "solution.py").read_text()


def server_env(database: Path, tmp_path: Path) -> dict[str, str]:
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{database}",
        "KVPREP_QUEUE_NAME": f"kvprep-two-{os.getpid()}",
        "KVPREP_RATELIMIT_FILE": str(tmp_path / "rate-limits.sqlite3"),
        "KVPREP_GRADING_WORKERS": "1",
        "OMP_NUM_THREADS": "1",
    }
    # The test process names these files for itself (tests/conftest.py); here they are left
    # unset so that each server derives them from its database, as a deployment does.
    for name in ("KVPREP_QUEUE_FILE", "KVPREP_LAB_LOCK_FILE", "REDIS_URL", "KVPREP_REDIS_URL"):
        env.pop(name, None)
    return env


@pytest.fixture
def two_servers(tmp_path: Path) -> Iterator[tuple[Cluster, Path]]:
    database = tmp_path / "shared.sqlite3"
    cluster = Cluster(env=server_env(database, tmp_path), logs=tmp_path, ports=[free_port(), free_port()])
    try:
        # One after the other: the first migrates and syncs the bank, the second finds it done.
        cluster.servers.append(cluster.start_server(0))
        cluster.wait_until_serving(0, timeout=120)
        cluster.servers.append(cluster.start_server(1))
        cluster.wait_until_serving(1, timeout=120)
        yield cluster, database
    finally:
        cluster.stop_all()


def graded_on(url: str) -> dict[str, object]:
    with httpx.Client(base_url=url, timeout=40) as client:
        response = client.post(f"/api/challenges/{SLUG}/submissions", json={"code": SOLUTION})
        assert response.status_code == 202, response.text
        done = client.get(f"/api/submissions/{response.json()['id']}", params={"wait": 30}).json()
    assert done["status"] == "done", done
    return dict(done)


def test_two_servers_of_one_database_share_its_queue_and_lab_lock(
    two_servers: tuple[Cluster, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    cluster, database = two_servers
    for name in ("KVPREP_QUEUE_FILE", "KVPREP_LAB_LOCK_FILE"):
        monkeypatch.delenv(name, raising=False)  # the names the servers derived, derived here
    named = Settings(database_url=f"sqlite:///{database}")
    queue = database.with_name(f"{database.name}.grading-queue.sqlite3")
    assert named.queue_file == queue
    assert named.lab_lock_file == database.with_name(f"{database.name}.lab.lock")
    # The first server holds the queue's consumer lock and wrote its database into it.
    lock_file = queue.with_name(queue.name + ".lock")
    assert lock_file.read_text().strip() == f"sqlite:///{database}"
    time.sleep(1.0)  # the second server's start-up line is written
    assert "consumes the queue" in cluster.tail("server1"), cluster.tail("server1")
    assert "consumes the queue" not in cluster.tail("server0")
    # A submission made on the second server is graded (by the first, through the shared queue).
    assert graded_on(cluster.url(1))["verdict"] == "passed"
    assert graded_on(cluster.url(0))["verdict"] == "passed"


def test_a_server_of_another_database_on_the_same_queue_file_is_refused(
    two_servers: tuple[Cluster, Path], tmp_path: Path
) -> None:
    cluster, database = two_servers
    queue = database.with_name(f"{database.name}.grading-queue.sqlite3")
    other = tmp_path / "other.sqlite3"
    env = server_env(other, tmp_path) | {
        "KVPREP_QUEUE_FILE": str(queue),
        "KVPREP_LAB_LOCK_FILE": str(database.with_name(f"{database.name}.lab.lock")),
    }
    done = subprocess.run(
        [sys.executable, "-m", "app.cli", "serve", "--port", str(free_port())],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert "refusing to start" in done.stderr and "another database" in done.stderr
    assert str(queue) in done.stderr and str(database) in done.stderr and str(other) in done.stderr
    assert not other.exists()  # refused before it migrated anything
    # The servers already running still grade.
    assert graded_on(cluster.url(1))["verdict"] == "passed"

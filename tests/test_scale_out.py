"""Scale-out for real: two `kvprep serve` and two `kvprep worker` processes on PostgreSQL and Redis.

A burst of 200 submissions from 50 guests spread over both servers; mid-burst one worker is
killed with SIGKILL while it grades and one server is restarted. Every accepted submission
gets exactly one verdict and one set of reviews, and the pages answer throughout. Bounded:
every wait has a deadline, and the whole test takes well under two minutes on the CI machine.
"""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx2 as httpx
import pytest
import redis
from sqlalchemy import Engine, func, text
from sqlmodel import Session, col, select

from app.config import ROOT
from app.content.catalog import load_catalog
from app.db import make_engine, migrate
from app.models import Card, Review, Submission
from app.services.content_sync import sync_bank
from tests.conftest import POSTGRES_URL

pytestmark = pytest.mark.slow

REDIS_URL = os.environ.get("KVPREP_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
SLUG = "kv-cache-bytes"
CHALLENGE = ROOT / "questions" / "challenges" / SLUG
USERS, PER_USER = 50, 4  # 200 submissions
KILL_AT, RESTART_AT = 40, 100  # accepted submissions before the worker is killed / the server restarted


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Cluster:
    env: dict[str, str]
    logs: Path
    ports: list[int]
    servers: list[subprocess.Popen[bytes]] = field(default_factory=list)
    workers: list[subprocess.Popen[bytes]] = field(default_factory=list)
    started: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def _spawn(self, name: str, args: list[str]) -> subprocess.Popen[bytes]:
        # A session of its own: the sandbox's fork server goes with its process group at the end.
        with (self.logs / f"{name}.log").open("ab") as log:
            process = subprocess.Popen(
                [sys.executable, "-m", "app.cli", *args],
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.started.append(process)
        return process

    def start_server(self, index: int) -> subprocess.Popen[bytes]:
        return self._spawn(f"server{index}", ["serve", "--port", str(self.ports[index])])

    def start_worker(self, index: int) -> subprocess.Popen[bytes]:
        return self._spawn(f"worker{index}", ["worker", "--threads", "2"])

    def url(self, index: int) -> str:
        return f"http://127.0.0.1:{self.ports[index]}"

    def wait_until_serving(self, index: int, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.url(index)}/api/challenges", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            assert self.servers[index].poll() is None, self.tail(f"server{index}")
            time.sleep(0.2)
        raise AssertionError(f"server {index} did not answer in {timeout} s\n{self.tail(f'server{index}')}")

    def tail(self, name: str) -> str:
        path = self.logs / f"{name}.log"
        return path.read_text(errors="replace")[-3000:] if path.exists() else ""

    def stop_all(self) -> None:
        for process in self.started:
            if process.poll() is None:
                process.terminate()
        for process in self.started:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
            # Whatever the process left in its own group (a sandbox fork server) goes too.
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


@pytest.fixture
def database() -> Iterator[tuple[str, Engine]]:
    """A PostgreSQL schema of this test's own (search_path), migrated and holding the bank."""
    schema = f"kvprep_scale_{os.getpid()}"
    admin = make_engine(POSTGRES_URL)
    with admin.begin() as conn:
        conn.execute(text(f"DROP SCHEMA IF EXISTS {schema} CASCADE"))
        conn.execute(text(f"CREATE SCHEMA {schema}"))
    separator = "&" if "?" in POSTGRES_URL else "?"
    url = f"{POSTGRES_URL}{separator}options=-csearch_path%3D{schema}"
    migrate(url)
    engine = make_engine(url)
    with Session(engine) as session:
        sync_bank(session=session, bank=load_catalog(ROOT / "questions").bank)
    yield url, engine
    engine.dispose()
    with admin.begin() as conn:
        conn.execute(text(f"DROP SCHEMA IF EXISTS {schema} CASCADE"))
    admin.dispose()


@pytest.fixture
def cluster(database: tuple[str, Engine], tmp_path: Path) -> Iterator[Cluster]:
    url, _ = database
    queue = f"kvprep-scale-{os.getpid()}-{secrets.token_hex(4)}"
    env = {
        **os.environ,
        "DATABASE_URL": url,
        "REDIS_URL": REDIS_URL,
        "KVPREP_QUEUE_NAME": queue,  # rate-limit keys carry it too: nothing shared with other runs
        "KVPREP_SYNC_CONTENT_ON_START": "false",  # synced once above: two servers syncing collide
        "KVPREP_GRADING_WORKERS": "0",  # the servers only enqueue; the workers grade
        "KVPREP_GRADING_LEASE_S": "3",
        "KVPREP_GRADING_REAP_INTERVAL_S": "0.5",
        "KVPREP_GRADING_QUEUE_LEASE_S": "15",
        "KVPREP_GUESTS_PER_HOUR": "100000",
        "KVPREP_SUBMISSIONS_PER_MINUTE": "1000",
        "OMP_NUM_THREADS": "1",
    }
    ports = [free_port(), free_port()]
    running = Cluster(env=env, logs=tmp_path, ports=ports)
    t0 = time.monotonic()
    try:
        running.workers = [running.start_worker(0), running.start_worker(1)]
        running.servers = [running.start_server(0), running.start_server(1)]
        running.wait_until_serving(0)
        running.wait_until_serving(1)
        print(f"cluster up in {time.monotonic() - t0:.1f} s")
        yield running
    finally:
        running.stop_all()
        client = redis.Redis.from_url(REDIS_URL)
        for key in client.scan_iter(f"*{queue}*"):
            client.delete(key)
        client.close()


@dataclass
class Burst:
    accepted: dict[str, bool] = field(default_factory=dict)  # submission id -> expected to pass
    lock: threading.Lock = field(default_factory=threading.Lock)
    refused: list[str] = field(default_factory=list)

    def count(self) -> int:
        with self.lock:
            return len(self.accepted)


def submit_as_guest(cluster: Cluster, user: int, burst: Burst, stop: threading.Event) -> None:
    """One guest's submissions, alternating between the servers; a server that is down (restarting)
    sends the guest to the other one, as a load balancer would."""
    solution, starter = (CHALLENGE / "solution.py").read_text(), (CHALLENGE / "starter.py").read_text()
    with httpx.Client(timeout=10) as client:  # one cookie jar: cookies ignore the port
        for n in range(PER_USER):
            passing = (user + n) % 4 != 0  # three in four pass
            deadline = time.monotonic() + 30
            server = (user + n) % 2
            while not stop.is_set():
                try:
                    response = client.post(
                        f"{cluster.url(server)}/api/challenges/{SLUG}/submissions",
                        json={"code": solution if passing else starter},
                    )
                except httpx.HTTPError:
                    response = None
                if response is not None and response.status_code == 202:
                    with burst.lock:
                        burst.accepted[response.json()["id"]] = passing
                    break
                if response is not None and response.status_code < 500:
                    burst.refused.append(f"{response.status_code} {response.text[:200]}")
                    break
                assert time.monotonic() < deadline, f"guest {user}: no server accepted for 30 s"
                server = 1 - server
                time.sleep(0.1)
            time.sleep(0.3 + (user % 5) * 0.1)  # spread the burst over several seconds


def watch_pages(
    cluster: Cluster, stop: threading.Event, restarting: threading.Event, failures: list[str]
) -> None:
    """Pages from both servers, all through the burst: the one not restarting must always answer."""
    with httpx.Client(timeout=10) as client:
        while not stop.is_set():
            for index, path in ((0, "/cards"), (1, "/cards"), (0, "/challenges")):
                if index == 1 and restarting.is_set():
                    continue
                try:
                    status = client.get(f"{cluster.url(index)}{path}").status_code
                except httpx.HTTPError as exc:
                    status = -1
                    if not (index == 1 and restarting.is_set()):
                        failures.append(f"server {index} {path}: {exc!r}")
                    continue
                if status != 200:
                    failures.append(f"server {index} {path}: {status}")
            time.sleep(0.2)


def running_held_by(engine: Engine, pid: int) -> int:
    with Session(engine) as session:
        return int(
            session.exec(
                select(func.count())
                .select_from(Submission)
                .where(
                    col(Submission.status) == "running", col(Submission.lease_owner).startswith(f"{pid:x}-")
                )
            ).one()
        )


def test_two_servers_two_workers_survive_a_killed_worker_and_a_restarted_server(
    cluster: Cluster, database: tuple[str, Engine]
) -> None:
    _, engine = database
    burst, stop, restarting = Burst(), threading.Event(), threading.Event()
    page_failures: list[str] = []
    pages = threading.Thread(target=watch_pages, args=(cluster, stop, restarting, page_failures))
    guests = [threading.Thread(target=submit_as_guest, args=(cluster, u, burst, stop)) for u in range(USERS)]
    t0 = time.monotonic()
    pages.start()
    for guest in guests:
        guest.start()
    try:
        # Mid-burst: SIGKILL worker 0 while it holds a submission it is grading.
        victim = cluster.workers[0]
        deadline = time.monotonic() + 60
        while True:
            while not (burst.count() >= KILL_AT and running_held_by(engine, victim.pid) > 0):
                assert time.monotonic() < deadline, "worker 0 never held a submission while the burst ran"
                time.sleep(0.02)
            # A verdict takes tens of milliseconds: stop the worker first, so the claim seen is still
            # its own when the SIGKILL lands (otherwise it may have stored that verdict in between).
            os.kill(victim.pid, signal.SIGSTOP)
            if running_held_by(engine, victim.pid) > 0:
                break
            os.kill(victim.pid, signal.SIGCONT)
        print(f"kill at {time.monotonic() - t0:.1f} s, {burst.count()} accepted")
        os.kill(victim.pid, signal.SIGKILL)
        victim.wait(timeout=10)
        killed_at = burst.count()
        # Later in the burst: restart server 1 (SIGTERM, then start it again on its port).
        deadline = time.monotonic() + 60
        while burst.count() < RESTART_AT:
            assert time.monotonic() < deadline, "the burst stalled before the restart"
            time.sleep(0.05)
        restarting.set()
        restarted_at = burst.count()
        cluster.servers[1].terminate()
        cluster.servers[1].wait(timeout=30)
        cluster.servers[1] = cluster.start_server(1)
        cluster.wait_until_serving(1)
        restarting.clear()
        print(f"restarted by {time.monotonic() - t0:.1f} s, {burst.count()} accepted")
        for guest in guests:
            guest.join(timeout=90)
        assert not any(g.is_alive() for g in guests), "the guests did not finish in 90 s"
        assert killed_at < USERS * PER_USER and restarted_at < USERS * PER_USER, "events came after the burst"
        assert burst.count() == USERS * PER_USER and not burst.refused, burst.refused[:3]
        print(f"burst over at {time.monotonic() - t0:.1f} s")
        # Every accepted submission gets its verdict, the killed worker's included.
        deadline = time.monotonic() + 90
        while True:
            with Session(engine) as session:
                pending = session.exec(
                    select(func.count()).select_from(Submission).where(col(Submission.status) != "done")
                ).one()
            if pending == 0:
                break
            assert time.monotonic() < deadline, f"{pending} submissions without a verdict after 90 s"
            time.sleep(0.25)
    finally:
        stop.set()
        for guest in guests:
            guest.join(timeout=10)
        pages.join(timeout=10)
    print(f"all graded by {time.monotonic() - t0:.1f} s")
    assert not page_failures, page_failures[:5]
    with Session(engine) as session:
        rows = {s.id: s for s in session.exec(select(Submission)).all()}
        assert set(burst.accepted) <= set(rows)
        for submission_id, passing in burst.accepted.items():
            row = rows[submission_id]
            assert row.status == "done" and row.verdict == ("passed" if passing else "failed"), row.result
        # Exactly one set of reviews per passing submission: a second grading would add another.
        topics = next(c.meta.topics for c in load_catalog(ROOT / "questions").challenges if c.slug == SLUG)
        live_cards = (
            select(func.count())
            .select_from(Card)
            .where(col(Card.topic).in_(topics), col(Card.retired).is_(False))
        )
        per_pass = int(session.exec(live_cards).one())
        assert per_pass > 0
        passed = sum(1 for r in rows.values() if r.verdict == "passed")
        reviews = int(
            session.exec(
                select(func.count()).select_from(Review).where(col(Review.source) == "challenge")
            ).one()
        )
        assert reviews == passed * per_pass
        assert max(r.attempts for r in rows.values()) >= 2  # the killed worker's claim was graded again

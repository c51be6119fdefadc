"""Spares: children the fork server forks and isolates ahead of the request that takes them."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

import pytest
from conftest import UID_BASE

from graders.limits import Limits
from graders.sandbox.client import ForkServerClient

AS_ROOT = pytest.mark.skipif(os.geteuid() != 0, reason="as root the server's pids are the host's")

PROBE = (
    "import os, resource, tempfile, time, torch\n"
    "def plant():\n"
    "    open('note.txt', 'w').write('left behind')\n"
    "    torch.left_behind = True\n"
    "    return tempfile.gettempdir()\n"
    "def look():\n"
    "    return tempfile.gettempdir(), sorted(os.listdir('.')), hasattr(torch, 'left_behind')\n"
    "def cpu_limit():\n"
    "    return list(resource.getrlimit(resource.RLIMIT_CPU))\n"
    "def nap(seconds):\n"
    "    time.sleep(seconds)\n"
    "    return seconds\n"
)


def wait_for_spares(client: ForkServerClient, count: int, timeout: float = 20.0) -> list[int]:
    end = time.monotonic() + timeout
    while len(ready := client.stats()["spares_ready"]) < count:
        assert time.monotonic() < end, f"spares never got ready: {client.stats()}"
        time.sleep(0.02)
    return list(ready)


def status(pid: int) -> dict[str, str]:
    with open(f"/proc/{pid}/status") as f:
        return {k: v.strip() for k, v in (line.split(":", 1) for line in f if ":" in line)}


@pytest.fixture
def client() -> Iterator[ForkServerClient]:
    client = ForkServerClient(worker_slots=1)
    try:
        yield client
    finally:
        client.shutdown()


def test_a_request_takes_a_ready_spare_and_a_new_one_is_forked(client: ForkServerClient) -> None:
    first = wait_for_spares(client, 1)
    with client.open(Limits()) as session:
        session.load(PROBE)
        assert session.spare and session.pid == first[0]
        second = wait_for_spares(client, 1)  # forked while the first one is still in use
        assert second != first
    stats = client.stats()
    assert (stats["spares_used"], stats["forked_on_demand"]) == (1, 0)


def test_consecutive_submissions_get_fresh_processes_and_temp_folders(client: ForkServerClient) -> None:
    wait_for_spares(client, 1)
    with client.open(Limits()) as first:
        first.load(PROBE)
        first_dir = first.call("plant")
        first_pid = first.pid
    wait_for_spares(client, 1)
    with client.open(Limits()) as second:
        second.load(PROBE)
        second_dir, listing, polluted = second.call("look")
        assert second.spare and second.pid != first_pid
    assert second_dir != first_dir
    assert listing == ["submission.py"] and not polluted


@AS_ROOT
def test_a_spare_is_fully_isolated_before_it_is_handed_out(client: ForkServerClient) -> None:
    (pid,) = wait_for_spares(client, 1)
    fields = status(pid)
    uid = int(fields["Uid"].split()[0])
    assert UID_BASE <= uid < UID_BASE + 1000 and fields["Groups"] == ""
    assert fields["Seccomp"] == "2" and fields["NoNewPrivs"] == "1"
    assert fields["CapEff"] == "0000000000000000"
    with open(f"/proc/{pid}/limits") as f:
        assert any(line.startswith("Max cpu time") and " 10 " in line for line in f)
    assert os.readlink(f"/proc/{pid}/ns/net") != os.readlink("/proc/self/ns/net")
    assert os.readlink(f"/proc/{pid}/ns/mnt") != os.readlink("/proc/self/ns/mnt")


def test_a_spare_with_other_limits_is_not_used_and_the_next_ones_follow(client: ForkServerClient) -> None:
    wait_for_spares(client, 1)
    limits = Limits(cpu_seconds=7)
    with client.open(limits) as session:
        session.load(PROBE)
        assert not session.spare and session.call("cpu_limit") == [7, 8]
    wait_for_spares(client, 1)
    with client.open(limits) as session:
        session.load(PROBE)
        assert session.spare and session.call("cpu_limit") == [7, 8]


def test_the_clocks_start_when_a_spare_is_handed_out(client: ForkServerClient) -> None:
    """Idle for longer than wall clock + the server's grace: still a full wall clock to run."""
    limits = Limits(wall_seconds=1)
    with client.open(limits) as session:  # makes the spares use these limits
        session.load(PROBE)
    wait_for_spares(client, 1)
    time.sleep(6.5)
    with client.open(limits) as session:
        session.load(PROBE)
        assert session.spare and session.call("nap", 0.5) == 0.5


def kill_and_wait(client: ForkServerClient, pid: int) -> None:
    os.kill(pid, 9)
    end = time.monotonic() + 10
    while os.path.exists(f"/proc/{pid}") or pid in client.stats()["spares_ready"]:
        assert time.monotonic() < end
        time.sleep(0.01)


@AS_ROOT
def test_a_dead_spare_is_replaced(client: ForkServerClient) -> None:
    (pid,) = wait_for_spares(client, 1)
    kill_and_wait(client, pid)
    (replacement,) = wait_for_spares(client, 1)
    with client.open(Limits()) as session:
        session.load(PROBE)
        assert session.spare and session.pid == replacement != pid
        assert session.call("nap", 0) == 0


@AS_ROOT
def test_spares_that_keep_dying_mean_forking_on_demand(client: ForkServerClient) -> None:
    for _ in range(3):  # forkserver.server.MAX_SPARE_FAILURES
        (pid,) = wait_for_spares(client, 1)
        kill_and_wait(client, pid)
    time.sleep(0.2)
    assert client.stats()["spares_ready"] == []
    with client.open(Limits()) as session:
        session.load(PROBE)
        assert not session.spare and session.call("nap", 0) == 0
    assert client.stats()["forked_on_demand"] == 1


@AS_ROOT
def test_nothing_is_left_running_after_shutdown() -> None:
    client = ForkServerClient(worker_slots=2)
    try:
        with client.open(Limits()) as session:
            session.load(PROBE)
        spares = wait_for_spares(client, 2)
        work = client._work
        assert work is not None and os.path.isdir(work)
    finally:
        client.shutdown()
    assert not any(os.path.exists(f"/proc/{pid}") for pid in spares)
    assert not os.path.exists(work)

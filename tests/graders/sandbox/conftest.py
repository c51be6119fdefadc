"""Fixtures for the sandbox tests: the fake challenge, and a check that nothing outlives a verdict."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator

import pytest
from fake_challenge import FAKE_MODULE, FAKE_SLUG, fake_module

import graders.checks
from graders.limits import Limits
from graders.runner import grade
from graders.verdict import Result

UID_BASE, UID_COUNT = 61440, 1024  # the defaults of app/config.py


@pytest.fixture(autouse=True)
def fake_check(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(graders.checks.CHALLENGE_MODULES, FAKE_SLUG, FAKE_MODULE)
    monkeypatch.setitem(sys.modules, FAKE_MODULE, fake_module())


def _parent(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return 0


def _is_fork_server(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return b"graders.sandbox.forkserver" in f.read()
    except OSError:
        return False


def belongs_to_another_run(pid: int) -> bool:
    """Under a fork server that this test process did not start (a dev server, another test run)."""
    me = os.getpid()
    while pid > 1:
        pid = _parent(pid)
        if pid == me:
            return False
        if pid > 1 and _is_fork_server(pid) and _parent(pid) != me:
            return True
    return False  # an orphan: it escaped its sandbox, whoever started it


def sandbox_processes() -> list[tuple[int, int, str]]:
    """(pid, uid, name) of every process running as a sandbox uid, but other runs' children."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status") as f:
                fields = dict(line.split(":", 1) for line in f if ":" in line)
        except OSError:
            continue
        uid = int(fields.get("Uid", "0").split()[0])
        if UID_BASE <= uid < UID_BASE + UID_COUNT and not belongs_to_another_run(int(entry)):
            found.append((int(entry), uid, fields.get("Name", "").strip()))
    return found


def idle_spares() -> set[int]:
    """Pids of the shared fork server's spares: forked and isolated, never handed out."""
    from graders.sandbox import client as sandbox_client

    shared = sandbox_client._shared
    if shared is None or shared._proc is None or shared._proc.poll() is not None:
        return set()
    stats = shared.stats()
    assert len(stats["spares_ready"]) <= stats["spare_target"]
    return set(stats["spares_ready"])


@pytest.fixture(autouse=True)
def nothing_left_running() -> Iterator[None]:
    """After every test, no process may still run as a sandbox uid (as root, the sandbox's uids).

    The only exception: the shared fork server's idle spares (at most one per worker slot),
    which have run no submission's code (see graders/sandbox/forkserver/__main__.py).
    """
    yield
    if os.geteuid() != 0:
        return
    deadline = time.monotonic() + 2.0
    while True:
        spares = idle_spares()
        left = [p for p in sandbox_processes() if p[0] not in spares]
        if not left or time.monotonic() >= deadline:
            break
        time.sleep(0.05)
    assert not left, f"processes outlived the verdict: {left}"


@pytest.fixture
def grade_code() -> Callable[..., Result]:
    def run(code: str, **limits: float) -> Result:
        return grade(FAKE_SLUG, code, Limits(**limits) if limits else None)  # type: ignore[arg-type]

    return run

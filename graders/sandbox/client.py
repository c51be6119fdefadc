"""The grader's side of the sandbox: start the fork server, ask it for children.

`ForkServerClient` starts `python -m graders.sandbox.forkserver` lazily (scrubbed environment,
one torch thread, a private 0700 folder holding the control socket), restarts it if it
died, and hands out `SandboxLink`s: one forked, isolated child per submission, driven
through the SubmissionLink protocol of graders/sandbox/protocol.py. Several grading threads may
share one client; each session has its own connection and child, and at most
`worker_slots` children run at once. The session itself, and how it reads what a child
sends, is graders/sandbox/submission_process.py: by the time `close()` returns the child is
killed (with seccomp on, the server's word that the SIGKILL is sent and it could start
nothing; without, its exit report) and the server reaps it.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import selectors
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import graders
from graders.limits import Limits
from graders.sandbox.submission_process import SandboxError, SandboxLink

__all__ = [
    "PROJECT_ROOT",
    "ForkServerClient",
    "SandboxError",
    "SandboxLink",
    "describe_isolation",
    "shared_client",
    "shutdown_shared",
]

log = logging.getLogger("graders.sandbox")

PROJECT_ROOT = str(Path(graders.__file__).resolve().parent.parent)
START_TIMEOUT_S = 120.0
_APPLICABLE_ONLY_AS_ROOT = {"uid"}
_APPLICABLE_ONLY_UNPRIVILEGED = {"userns"}
DEFAULT_UID_BASE, DEFAULT_UID_COUNT = 61440, 1024  # app/config.py: sandbox_uid_base, sandbox_uid_count


# Short names, then the owner's pid: the control socket's path must stay under AF_UNIX's 108 bytes
# even inside a deep TMPDIR.
SERVER_PREFIX, WORK_PREFIX = "kvprep-sb-", "kvprep-work-"


def remove_leftovers(root: str | None = None) -> list[str]:
    """Remove the sandbox folders that a process of ours, now gone, left in the temp folder.

    A client removes its folders when it stops; one killed with SIGKILL cannot. Each folder's
    name carries the pid of the process that made it: when no such process runs and the folder
    is ours (same uid), nothing uses it any more. Returns the paths removed."""
    root = root or tempfile.gettempdir()
    removed: list[str] = []
    try:
        names = os.listdir(root)
    except OSError:
        return removed
    for name in names:
        prefix = next((p for p in (SERVER_PREFIX, WORK_PREFIX) if name.startswith(p)), None)
        owner = name[len(prefix) :].split("-", 1)[0] if prefix else ""
        if not owner.isdigit():
            continue
        path = os.path.join(root, name)
        try:
            if os.lstat(path).st_uid != os.geteuid() or not os.path.isdir(path) or os.path.islink(path):
                continue
            os.kill(int(owner), 0)
            continue  # its maker (or a process that took its pid) still runs: leave it
        except ProcessLookupError:
            pass
        except (PermissionError, OSError):
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed


def _env_int(name: str, default: int) -> int:
    value = os.environ.get(name, "").strip()
    return int(value) if value.isdigit() else default


class ForkServerClient:
    """Starts (lazily) and restarts one fork server; opens sessions. Thread-safe."""

    def __init__(
        self,
        *,
        worker_slots: int = 2,
        disable: Iterable[str] = (),
        protect: Iterable[str] = (),
        uid_base: int | None = None,
        uid_count: int | None = None,
        spares: int | None = None,
    ) -> None:
        """uid_base/uid_count: the uids the sandbox may use as root (default: the environment's
        KVPREP_SANDBOX_UID_BASE / _COUNT, else 61440 and 1024); the fork server claims its own
        block of them (graders/sandbox/uid_ranges.py)."""
        self.worker_slots = worker_slots
        self.spares = worker_slots if spares is None else spares
        self.disable = sorted(set(disable))
        self.protect = [PROJECT_ROOT, *protect]
        self.uid_base = (
            _env_int("KVPREP_SANDBOX_UID_BASE", DEFAULT_UID_BASE) if uid_base is None else uid_base
        )
        self.uid_count = (
            _env_int("KVPREP_SANDBOX_UID_COUNT", DEFAULT_UID_COUNT) if uid_count is None else uid_count
        )
        self.uids: tuple[int, int] | None = None  # the block its fork server claimed (first, last)
        self.isolation: dict[str, dict[str, Any]] = {}
        self.root = False
        self._slots = threading.BoundedSemaphore(worker_slots)
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._dir: str | None = None
        self._work: str | None = None

    @property
    def socket_path(self) -> str:
        assert self._dir is not None
        return os.path.join(self._dir, "ctl.sock")

    @property
    def server_pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def ensure_started(self) -> None:
        with self._lock:
            if self._proc is not None and self._proc.poll() is None:
                return
            self._cleanup_locked()
            self._start_locked()

    def _start_locked(self) -> None:
        remove_leftovers()
        self._dir = tempfile.mkdtemp(prefix=f"{SERVER_PREFIX}{os.getpid()}-")
        self._work = tempfile.mkdtemp(prefix=f"{WORK_PREFIX}{os.getpid()}-")
        os.chmod(self._work, 0o711)
        cmd = [
            sys.executable, "-s", "-m", "graders.sandbox.forkserver",
            "--socket", self.socket_path, "--work", self._work, "--hide", self._dir,
            "--uid-base", str(self.uid_base), "--uid-count", str(self.uid_count),
            "--spares", str(self.spares),
        ]  # fmt: skip
        for path in self.protect:
            cmd += ["--protect", path]
        for layer in self.disable:
            cmd += ["--disable", layer]
        env = {
            "PATH": "/usr/bin:/bin",
            "LANG": "C.UTF-8",
            "HOME": self._dir,
            "TMPDIR": self._dir,
            "PYTHONPATH": PROJECT_ROOT,
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONNOUSERSITE": "1",
            "OMP_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
            "OPENBLAS_NUM_THREADS": "1",
        }
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            cwd=self._dir,
            env=env,
            start_new_session=True,
        )
        self._proc = proc
        line = b""
        assert proc.stdout is not None
        with selectors.DefaultSelector() as sel:
            sel.register(proc.stdout, selectors.EVENT_READ)
            end = time.monotonic() + START_TIMEOUT_S
            while not line.endswith(b"\n"):
                if not sel.select(max(0.0, end - time.monotonic())):
                    self._cleanup_locked()
                    raise SandboxError("the fork server did not start in time")
                chunk = os.read(proc.stdout.fileno(), 1 << 16)
                if not chunk:
                    status = proc.wait()
                    self._cleanup_locked()
                    raise SandboxError(f"the fork server exited with status {status} (see its stderr)")
                line += chunk
        proc.stdout.close()
        ready = json.loads(line)
        if not ready.get("ready"):
            self._cleanup_locked()
            raise SandboxError(f"the fork server could not start: {ready.get('error')}")
        self.uids = tuple(ready["uids"]) if ready.get("uids") else None  # type: ignore[assignment]
        self.isolation = ready["isolation"]
        self.root = bool(ready.get("root"))
        self._log_isolation()

    def _log_isolation(self) -> None:
        active = [name for name, s in self.isolation.items() if s["active"]]
        log.info("sandbox fork server %s ready; isolation layers on: %s", self.server_pid, ", ".join(active))
        for name, status in self.isolation.items():
            if status["active"]:
                continue
            applicable = not (
                (name in _APPLICABLE_ONLY_AS_ROOT and not self.root)
                or (name in _APPLICABLE_ONLY_UNPRIVILEGED and self.root)
            )
            level = logging.WARNING if applicable and name not in self.disable else logging.INFO
            log.log(level, "sandbox layer %s is off: %s", name, status["detail"])

    def _cleanup_locked(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            if proc.stdin is not None:
                try:
                    proc.stdin.close()  # EOF: the server kills its children and exits
                except OSError:
                    pass
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            if proc.stdout is not None and not proc.stdout.closed:
                proc.stdout.close()
        for folder in (self._dir, self._work):
            if folder:
                shutil.rmtree(folder, ignore_errors=True)
        self._dir = self._work = None

    def shutdown(self) -> None:
        with self._lock:
            self._cleanup_locked()

    def _spawn(self, limits: Limits) -> tuple[socket.socket, dict[str, Any], list[int]]:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            conn.settimeout(30.0)
            conn.connect(self.socket_path)
            conn.send(json.dumps({"op": "spawn", "limits": limits.to_dict()}).encode())
            data, fds, _, _ = socket.recv_fds(conn, 1 << 16, 2)
        except BaseException:
            conn.close()
            raise
        if not data:
            conn.close()
            raise ConnectionError("the fork server closed the connection")
        return conn, json.loads(data), fds

    def stats(self) -> dict[str, Any]:
        """The server's counters: spares_used, forked_on_demand, spares_ready (their pids)."""
        self.ensure_started()
        with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as conn:
            conn.settimeout(10.0)
            conn.connect(self.socket_path)
            conn.send(b'{"op": "stats"}')
            reply: dict[str, Any] = json.loads(conn.recv(1 << 16))
        return reply

    def open(self, limits: Limits | None = None) -> SandboxLink:
        """A fresh child for one submission. Waits for a free worker slot; the wall clock starts after."""
        limits = limits or Limits()
        self._slots.acquire()
        try:
            self.ensure_started()
            try:
                conn, reply, fds = self._spawn(limits)
            except OSError:  # the server died: start a new one, once
                self.ensure_started()
                conn, reply, fds = self._spawn(limits)
            if not reply.get("ok") or len(fds) != 2:
                for fd in fds:
                    os.close(fd)
                conn.close()
                raise SandboxError(f"the fork server could not start a child: {reply.get('error')}")
        except (OSError, ValueError) as exc:
            self._slots.release()
            raise SandboxError(f"the fork server is unreachable: {exc}") from exc
        except BaseException:
            self._slots.release()
            raise
        sock = socket.socket(fileno=fds[0])
        deadline = time.monotonic() + limits.wall_seconds
        return SandboxLink(
            conn,
            sock,
            fds[1],
            int(reply["pid"]),
            limits,
            deadline,
            self._slots.release,
            bool(reply.get("spare")),
        )


# --- the process-wide client -----------------------------------------------------------------

_shared: ForkServerClient | None = None
_shared_lock = threading.Lock()


def shared_client(
    worker_slots: int | None = None, *, uid_base: int | None = None, uid_count: int | None = None
) -> ForkServerClient:
    """The one client of this process, created on first use (later calls' arguments are ignored).

    KVPREP_SANDBOX_DISABLE=layer,layer turns layers off (for debugging a degraded host);
    KVPREP_SANDBOX_SPARES=N keeps N spares ready instead of one per worker slot (0: fork on demand);
    KVPREP_SANDBOX_UID_BASE / KVPREP_SANDBOX_UID_COUNT stand in for uid_base / uid_count.
    """
    global _shared
    with _shared_lock:
        if _shared is None:
            disable = [x for x in os.environ.get("KVPREP_SANDBOX_DISABLE", "").split(",") if x]
            spares = os.environ.get("KVPREP_SANDBOX_SPARES", "").strip()
            _shared = ForkServerClient(
                worker_slots=worker_slots or Limits().worker_slots,
                disable=disable,
                spares=int(spares) if spares.isdigit() else None,
                uid_base=uid_base,
                uid_count=uid_count,
            )
        return _shared


def shutdown_shared() -> None:
    global _shared
    with _shared_lock:
        client, _shared = _shared, None
    if client is not None:
        client.shutdown()


def _forget_after_fork() -> None:
    """A forked copy of this process gets its own fork server on first use, never its parent's."""
    global _shared, _shared_lock
    _shared, _shared_lock = None, threading.Lock()


atexit.register(shutdown_shared)
os.register_at_fork(after_in_child=_forget_after_fork)


def describe_isolation() -> dict[str, dict[str, Any]]:
    """Which isolation layers are active here, and why the others are not (starts the server)."""
    client = shared_client()
    client.ensure_started()
    return dict(client.isolation)

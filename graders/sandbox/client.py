"""The grader's side of the sandbox: start the fork server, open sessions, talk to children.

`ForkServerClient` starts `python -m graders.sandbox.forkserver` lazily (scrubbed environment,
one torch thread, a private 0700 folder holding the control socket), restarts it if it
died, and hands out `SandboxSession`s: one forked, isolated child per submission, driven
through the Session protocol of graders/sandbox/session.py. Several grading threads may
share one client; each session has its own connection and child, and at most
`worker_slots` children run at once.

Everything a child sends is decoded here as data (graders/sandbox/wire.py) and nothing it
sends is trusted: a broken frame, an early exit, a blocked operation or the wall clock
ends the session with LimitExceeded, and by the time `close()` returns the child is killed
(with seccomp on, the server's word that the SIGKILL is sent and it could start nothing;
without, its exit report) and the server reaps it.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import selectors
import shutil
import signal
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
from graders.sandbox import wire
from graders.sandbox.session import (
    Handle,
    Keep,
    LimitExceeded,
    LoadError,
    SubmissionError,
    measured_reply,
    storages_reply,
)

log = logging.getLogger("graders.sandbox")

PROJECT_ROOT = str(Path(graders.__file__).resolve().parent.parent)
START_TIMEOUT_S = 120.0
EXIT_WAIT_S = 5.0
EXIT_SETUP_FAILED, EXIT_NO_MEMORY = 70, 71
MAX_PENDING, MAX_PENDING_BYTES = 64, 64 << 20  # requests held back before they go out on their own
_APPLICABLE_ONLY_AS_ROOT = {"uid"}
_APPLICABLE_ONLY_UNPRIVILEGED = {"userns"}
DEFAULT_UID_BASE, DEFAULT_UID_COUNT = 61440, 1024  # app/config.py: sandbox_uid_base, sandbox_uid_count


def _env_int(name: str, default: int) -> int:
    value = os.environ.get(name, "").strip()
    return int(value) if value.isdigit() else default


class SandboxError(Exception):
    """The sandbox itself failed (could not start, could not fork): not the submission's fault."""


class SandboxSession:
    """One submission's process, seen from the grader. Implements the Session protocol."""

    def __init__(
        self,
        conn: socket.socket,
        sock: socket.socket,
        out_fd: int,
        pid: int,
        limits: Limits,
        deadline: float,
        release: Any,
        spare: bool = False,
    ) -> None:
        self.conn = conn
        self.sock = sock
        self.out_fd = out_fd
        self.pid = pid
        self.limits = limits
        self.deadline = deadline
        self._release = release
        self.spare = spare  # the child was forked and isolated ahead of this request
        self._exit: dict[str, Any] | None = None
        self._failure: LimitExceeded | None = None
        self._final_output: str | None = None
        self.closed = False
        # setitem and new_dict requests not sent yet: they go out with the next request, in one round trip
        # (graders/sandbox/runtime.py "batch"), their tensors in that request's payload.
        self._pending: list[dict[str, Any]] = []
        self._pending_encoder: wire.Encoder | None = None
        self._named = 0  # the last handle id this side named (new_dict): -1, -2, ...
        self.round_trips = 0  # requests sent (a batch counts once), for graders/bench.py
        self.bytes_sent = 0
        self.bytes_received = 0

    @property
    def failure(self) -> LimitExceeded | None:
        """The limit that ended this session, if any (even if a check swallowed the exception)."""
        return self._failure

    # -- the protocol -----------------------------------------------------------------------

    def load(self, code: str) -> None:
        """Run the code as module `submission` (file submission.py); LoadError with the message and line."""
        self._request({"op": "load", "code": code})

    def has(self, name: str) -> bool:
        return bool(self._request({"op": "has", "name": name}))

    def call(
        self,
        target: str | Handle,
        *args: Any,
        keep: Keep = False,
        memory_error_is_data: bool = False,
        **kwargs: Any,
    ) -> Any:
        encoder = self._encoder()
        header = {
            "op": "call",
            "target": target if isinstance(target, str) else encoder.encode(target),
            "args": encoder.encode(list(args)),
            "kwargs": encoder.encode(dict(kwargs)),
            "keep": keep if keep == "both" else bool(keep),
        }
        if memory_error_is_data:
            header["memory_error_is_data"] = True
        return self._request(header, encoder)

    def call_measured(
        self, target: str | Handle, *args: Any, keep: bool = False, **kwargs: Any
    ) -> tuple[Any, int]:
        encoder = self._encoder()
        header = {
            "op": "call",
            "target": target if isinstance(target, str) else encoder.encode(target),
            "args": encoder.encode(list(args)),
            "kwargs": encoder.encode(dict(kwargs)),
            "keep": bool(keep),
            "measure": True,
        }
        return measured_reply(self._request(header, encoder))

    def call_and_storages(self, target: Handle, *args: Any, of: Handle) -> tuple[Any, list[tuple[int, int]]]:
        encoder = self._encoder()
        header = {
            "op": "call",
            "target": encoder.encode(target),
            "args": encoder.encode(list(args)),
            "kwargs": encoder.encode({}),
            "keep": False,
            "storages_of": encoder.encode(of),
        }
        reply = self._request(header, encoder)
        if type(reply) is not list or len(reply) != 2:
            raise SubmissionError("RuntimeError", "the call's reply was tampered with")
        return reply[0], storages_reply(reply[1])

    def storages(self, handle: Handle) -> list[tuple[int, int]]:
        return storages_reply(self._request({"op": "storages", "handle": wire.Encoder().encode(handle)}))

    def new_dict(self, initial: dict[str, Any] | None = None) -> Handle:
        """Sent with the next request, like setitem: the grader names the dict (a negative id)."""
        self._named -= 1
        encoder = self._encoder()
        self._defer(
            {"op": "new_dict", "initial": encoder.encode(dict(initial or {})), "id": self._named}, encoder
        )
        return Handle(self._named)

    def get(self, handle: Handle) -> Any:
        return self._request({"op": "get", "handle": wire.Encoder().encode(handle)})

    def setitem(self, handle: Handle, key: str | int, value: Any) -> None:
        """Sent with the next request (one round trip for a step's cache and the step itself)."""
        encoder = self._encoder()
        header = {
            "op": "setitem",
            "handle": encoder.encode(handle),
            "key": key,
            "value": encoder.encode(value),
        }
        self._defer(header, encoder)

    def output(self) -> str:
        if self._final_output is not None:
            return self._final_output
        chars = self.limits.output_excerpt_chars
        try:
            size = os.fstat(self.out_fd).st_size
            start = max(0, size - 4 * chars)
            text = os.pread(self.out_fd, size - start, start).decode("utf-8", "replace")[-chars:]
        except OSError:
            return ""
        if size >= self.limits.output_bytes:
            text += f"\n[output capped at {self.limits.output_bytes} bytes]"
        return text

    def close(self) -> None:
        if self.closed:
            return
        self._final_output = self.output()
        self.closed = True
        try:
            self._stop(wait_for_exit=False)
        finally:
            for closer in (self.sock.close, self.conn.close, lambda: os.close(self.out_fd)):
                try:
                    closer()
                except OSError:
                    pass
            self._release()

    def __enter__(self) -> SandboxSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- plumbing ---------------------------------------------------------------------------

    def _defer(self, header: dict[str, Any], encoder: wire.Encoder) -> None:
        """Hold a request whose answer is only "done" back until the next request goes out."""
        if self._failure is not None:
            raise self._failure
        if self.closed:
            raise RuntimeError("the session is closed")
        if len(self._pending) + 1 >= MAX_PENDING or encoder.size >= MAX_PENDING_BYTES:
            self._request(header, encoder)  # with the ones held back so far
            return
        self._pending.append(header)
        self._pending_encoder = encoder

    def _encoder(self) -> wire.Encoder:
        """The encoder a request's values go into: the pending setitems' one, so all share a payload."""
        return self._pending_encoder or wire.Encoder()

    def _request(self, header: dict[str, Any], encoder: wire.Encoder | None = None) -> Any:
        if self._failure is not None:
            raise self._failure
        if self.closed:
            raise RuntimeError("the session is closed")
        if self._pending:
            encoder = self._pending_encoder
            header = {"op": "batch", "requests": [*self._pending, header]}
            self._pending, self._pending_encoder = [], None
        parts = encoder.parts if encoder is not None else None
        try:
            remaining = self.deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            self.sock.settimeout(remaining)
            wire.send_frame(self.sock, header, parts)
            self.round_trips += 1
            self.bytes_sent += encoder.size if encoder is not None else 0
            reply, payload = wire.recv_frame(
                self.sock, max_bytes=self.limits.max_reply_bytes, deadline=self.deadline, what="reply"
            )
            self.bytes_received += len(payload)
        except TimeoutError:
            self._stop()
            raise self._fail(
                "timeout", f"your code did not finish within the {self.limits.wall_seconds:g} s time limit"
            ) from None
        except wire.FrameTooLarge as exc:
            self._stop()
            message = f"your code's process sent back a reply too large to read: {exc}"
            raise self._fail("error", message) from None
        except wire.WireError as exc:
            self._stop()
            raise self._fail("error", f"your code's process sent back something unreadable: {exc}") from None
        except (EOFError, OSError):
            raise self._fail(*self._explain_exit(self._stop())) from None
        return self._interpret(reply, payload)

    def _interpret(self, reply: Any, payload: bytearray) -> Any:
        if type(reply) is not dict or len(reply) > 2:
            self._stop()
            raise self._fail("error", "your code's process sent back something unreadable")
        if "ok" in reply:
            try:
                return wire.decode(reply["ok"], payload)
            except wire.WireError as exc:
                self._stop()
                raise self._fail(
                    "error", f"your code's process sent back something unreadable: {exc}"
                ) from None
        if "raised" in reply and isinstance(reply["raised"], list) and len(reply["raised"]) == 2:
            type_name, message = (str(x) for x in reply["raised"])
            raise SubmissionError(type_name[:200], message[:2000])
        if "load_error" in reply:
            raise LoadError(str(reply["load_error"])[:2000])
        if "type_error" in reply:
            raise TypeError(str(reply["type_error"])[:500])
        if "key_error" in reply:
            raise KeyError(str(reply["key_error"])[:500])
        if "setup_error" in reply:
            self._stop()
            raise SandboxError(f"the sandbox could not isolate the submission: {reply['setup_error']}")
        self._stop()
        if reply.get("limit") == "memory_limit":
            gib = self.limits.memory_bytes / 2**30
            message = (
                f"your code ran out of memory (the limit is {gib:g} GiB): {str(reply.get('message'))[:300]}"
            )
            raise self._fail("memory_limit", message)
        if "blocked" in reply:
            raise self._fail(
                "error",
                f"the sandbox blocked {str(reply['blocked'])[:200]}: submissions may not start processes, "
                "use the network, or touch files outside their temporary folder",
            )
        if "exit" in reply:
            raise self._fail("error", f"your code called sys.exit({str(reply['exit'])[:100]}) during a test")
        raise self._fail("error", "your code's process sent back something unreadable")

    def _fail(self, verdict: str, message: str) -> LimitExceeded:
        self._failure = LimitExceeded(verdict, message)
        return self._failure

    def _stop(self, *, wait_for_exit: bool = True) -> dict[str, Any]:
        """Kill the child (if it still runs) and wait for the server's exit report.

        wait_for_exit=False (a session closed after its verdict) also takes the server's word that
        the SIGKILL is sent and the child could start nothing (seccomp on): nothing of it runs
        any more, and the server reaps it a few milliseconds later.
        """
        if self._exit is not None:
            return self._exit
        event: dict[str, Any] = {}
        wanted = ("exit",) if wait_for_exit else ("exit", "killed")
        try:
            self.conn.settimeout(EXIT_WAIT_S)
            self.conn.send(b'{"op": "kill"}')
            while True:
                data = self.conn.recv(1 << 16)
                if not data:
                    break
                message = json.loads(data)
                if isinstance(message, dict) and message.get("event") in wanted:
                    event = message
                    break
        except (OSError, ValueError):
            pass
        self._exit = event
        return event

    def _explain_exit(self, event: dict[str, Any]) -> tuple[str, str]:
        if not event:  # no exit report: the fork server itself is gone
            raise SandboxError("the fork server stopped answering")
        sig, code, cpu = event.get("signal"), event.get("code"), event.get("cpu") or 0.0
        if event.get("killed") == "deadline":
            return "timeout", f"your code did not finish within the {self.limits.wall_seconds:g} s time limit"
        if sig == signal.SIGXCPU or (sig == signal.SIGKILL and cpu >= self.limits.cpu_seconds - 0.05):
            return "timeout", f"your code used more than {self.limits.cpu_seconds} s of CPU time"
        if sig == signal.SIGSYS:
            return "error", "the sandbox stopped your code for a forbidden system call"
        if code == EXIT_NO_MEMORY:
            return "memory_limit", "your code ran out of memory"
        if code == EXIT_SETUP_FAILED:
            return "error", "the sandbox could not start your code"
        if sig is not None:
            name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
            hint = (
                " (often a sign of running out of memory)" if sig in (signal.SIGSEGV, signal.SIGABRT) else ""
            )
            return "error", f"your code's process was killed by {name}{hint}"
        if code is None:
            return "error", "your code's process stopped answering"
        return "error", f"your code's process exited (status {code}) in the middle of a test: os._exit()?"


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
        return os.path.join(self._dir, "control.sock")

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
        self._dir = tempfile.mkdtemp(prefix="kvprep-sandbox-")
        self._work = tempfile.mkdtemp(prefix="kvprep-submissions-")
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

    def open(self, limits: Limits | None = None) -> SandboxSession:
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
        return SandboxSession(
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

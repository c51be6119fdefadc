"""The fork server: a warm Python with torch and numpy that forks one isolated child per submission.

Started by the grader (graders/sandbox/client.py) as

    python -m graders.sandbox.forkserver --socket DIR/control.sock --work WORKDIR [--hide DIR]...
                                         [--protect DIR]... [--uid-base N] [--uid-count N]
                                         [--disable LAYER]... [--spares N]

with a scrubbed environment (OMP_NUM_THREADS=1) in a private 0700 folder. It imports only
torch, numpy, the stdlib and graders.sandbox's own modules (never graders.checks,
graders.reference or app: a child inherits this process's memory, so nothing in it may
help forge a verdict), sets torch to one thread before any torch op, warms torch up, then:

1. probes which isolation layers work here (a throw-away child tries each one) and prints
   one JSON line `{"ready": true, "isolation": {...}}` on stdout;
2. serves grader connections on a unix SOCK_SEQPACKET socket. Per connection, one child:
   `{"op": "spawn", "limits": {...}}` -> the server creates a socketpair and a memfd for
   the child's output, forks, and answers `{"ok": true, "pid": ...}` with the grader's end
   of the socketpair and the output memfd attached (SCM_RIGHTS). The grader then talks to
   the child directly (graders/sandbox/runtime.py). `{"op": "kill"}` or closing the
   connection kills the child (with seccomp on, `{"event": "killed"}` says the SIGKILL is
   sent); when it has exited the server sends `{"event": "exit", "code", "signal", "cpu",
   "killed"}` and frees its worker slot;
3. keeps `--spares N` children forked ahead (one per worker slot): each enters every layer
   (its own uid, namespaces, rlimits, Landlock, seccomp, a fresh temp folder), sends
   `{"ready": true}` on its socket, which the server still holds, then waits for its first
   request. A spawn takes a ready spare forked with the same limits (its server-side clock
   starts then; RLIMIT_CPU only counts CPU used) and a new spare is forked right away; a
   spare is handed out once, never reused. A dead, failed or stale-limits spare is dropped
   and the child is forked on demand;
4. exits, killing every child, when its stdin reaches EOF (the grader went away) or on SIGTERM.

As an ordinary user it first moves into a user namespace (and a PID namespace of its own,
whose PID 1 it is), so that it may create namespaces for its children; as root it does
not need to. See graders/sandbox/__init__.py for what all this protects against.
"""

from __future__ import annotations

import argparse
import errno
import gc
import json
import math
import os
import select
import selectors
import shutil
import signal
import socket
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass
from typing import Any

from graders.limits import Limits
from graders.sandbox import isolation as iso
from graders.sandbox import uid_ranges
from graders.sandbox.isolation import LayerStatus, Plan

DEFAULT_LIMITS = Limits().to_dict()
EXIT_SETUP_FAILED = 70
KILL_GRACE_S = 5.0  # the server's own backstop, past the grader's wall clock
SPARE_WAIT_S = 2.0  # how long a request waits for a spare still entering its layers
MAX_SPARE_FAILURES = 3  # spares dying before use this many times in a row: stop making them
CHILD_ENV_KEEP = ("LANG", "LC_ALL")
PREIMPORT = (
    "math cmath random typing dataclasses functools itertools collections collections.abc heapq "
    "bisect copy re json statistics fractions decimal string operator enum abc contextlib time "
    "numbers array struct warnings textwrap inspect traceback linecache types tempfile"
).split()


@dataclass
class ChildSpec:
    slot: int
    uid: int
    gid: int
    workdir: str
    sock_fd: int
    out_fd: int
    limits: dict[str, Any]
    server_pid: int
    spare: bool = False


@dataclass
class Child:
    pid: int
    pidfd: int
    slot: int
    workdir: str
    deadline: float
    conn: socket.socket | None
    killed: str | None = None
    # A spare (forked ahead of a request): the server holds the grader's ends until hand-out.
    spare: bool = False
    sock: socket.socket | None = None
    out_fd: int | None = None
    ready: bool = False


# --- inside the child ------------------------------------------------------------------------


def _close_all_but(keep: set[int]) -> None:
    low = 0
    for fd in sorted(keep) + [1 << 20]:
        if fd > low:
            os.closerange(low, fd)
        low = fd + 1


def _enter(plan: Plan, spec: ChildSpec, *, probe: bool) -> dict[str, str]:
    """Apply every layer the plan has on (or, when probing, every candidate); return failures.

    Not probing, the first failure raises: a child never runs with less isolation than the
    start-up log announced.
    """
    failures: dict[str, str] = {}

    def attempt(layer: str, action: Any) -> None:
        if not probe and not plan.on(layer):
            return
        if probe and layer in plan.layers and not plan.layers[layer].active:
            return  # already known to be off (disabled, or not applicable)
        try:
            action()
        except Exception as exc:  # noqa: BLE001 - each layer is best-effort while probing
            if not probe:
                raise RuntimeError(f"{layer}: {exc}") from None
            failures[layer] = f"{type(exc).__name__}: {exc}"

    os.setsid()
    attempt("netns", lambda: iso.unshare(iso.CLONE_NEWNET))
    attempt("ipcns", lambda: iso.unshare(iso.CLONE_NEWIPC))

    def mount_ns() -> None:
        iso.unshare(iso.CLONE_NEWNS)
        iso.mount(None, "/", None, iso.MS_REC | iso.MS_PRIVATE)
        flags = iso.MS_NOSUID | iso.MS_NODEV | iso.MS_NOEXEC
        size = int(spec.limits["disk_bytes"])
        options = f"size={size},nr_inodes=4096,mode=0700,uid={spec.uid},gid={spec.gid}"
        iso.mount("tmpfs", spec.workdir, "tmpfs", flags, options)
        for folder in plan.hide:
            iso.mount("tmpfs", folder, "tmpfs", flags | iso.MS_RDONLY, "size=4k,mode=0555")

    attempt("mountns", mount_ns)
    os.chdir(spec.workdir)
    workdir_fd = os.open(spec.workdir, iso.O_PATH)
    if plan.root:
        attempt("uid", lambda: iso.drop_to_uid(spec.uid, spec.gid))
    else:
        attempt("userns", iso.drop_capabilities)
    iso.prctl(iso.PR_SET_PDEATHSIG, signal.SIGKILL)  # after the uid change, which clears it
    if not plan.on("pidns") and os.getppid() != spec.server_pid:
        os._exit(EXIT_SETUP_FAILED)  # the server died before we could notice

    baseline = iso.address_space_now()  # /proc/self is out of reach once Landlock is on
    iso.prctl(iso.PR_SET_NO_NEW_PRIVS, 1)
    attempt(
        "landlock",
        lambda: iso.landlock_restrict(plan.landlock_abi, plan.rules, [(workdir_fd, iso.LL_TEMP_DIR)]),
    )
    os.close(workdir_fd)
    for rule in plan.rules:
        if rule.fd >= 0:
            os.close(rule.fd)

    def rlimits() -> None:  # after Landlock: its rule descriptors would count against NOFILE
        iso.set_rlimits(spec.limits, baseline_as=baseline, nproc=plan.on("uid"))

    attempt("rlimits", rlimits)
    attempt("seccomp", lambda: iso.seccomp_load(iso.seccomp_filter(os.getpid())))
    return failures


def _scrub_interpreter(protected: list[str]) -> None:
    """Environment and import path as a submission should see them (done once, in the server).

    Children inherit the result for free; per child only HOME, TMPDIR and tempfile's folder
    change (see _child_main). The project's folders leave sys.path and the import caches, and
    the editable-install finder that maps `graders`/`app` to them is removed.
    """
    keep = {k: os.environ[k] for k in CHILD_ENV_KEEP if k in os.environ}
    os.environ.clear()
    os.environ.update(keep)
    os.environ.update(
        PATH="/usr/bin:/bin", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1"
    )
    roots = [os.path.realpath(p) for p in protected]

    def allowed(entry: str) -> bool:
        if not entry or entry.startswith("__editable__") or not os.path.isabs(entry):
            return False
        real = os.path.realpath(entry)
        if os.path.basename(real) in ("site-packages", "dist-packages"):
            return True
        return not any(real == r or real.startswith(r.rstrip("/") + "/") for r in roots)

    sys.path[:] = [p for p in sys.path if allowed(p) and os.path.realpath(p) != os.getcwd()]
    for key in [k for k in sys.path_importer_cache if not allowed(k)]:
        del sys.path_importer_cache[key]
    sys.meta_path[:] = [f for f in sys.meta_path if "__editable__" not in getattr(f, "__module__", "")]
    sys.path_hooks[:] = [h for h in sys.path_hooks if "__editable__" not in getattr(h, "__module__", "")]
    sys.dont_write_bytecode = True


def _sanity() -> str:
    """What the probe runs once sandboxed: torch, numpy and a fresh stdlib import must work."""
    import importlib

    import numpy as np
    import torch

    x = torch.ones(4, 4)
    assert float((torch.softmax(x @ x, dim=-1)).sum()) == 4.0
    assert float(np.ones(3).sum()) == 3.0
    importlib.import_module("colorsys")
    return "ok"


def _warm_spare() -> None:
    """Run the ops a request will run once, while nobody waits: a forked child's first touch of
    each page of torch's and the interpreter's memory is a copy-on-write fault, and taking those
    here, inside every layer already, takes them off the first request's clock (3-10 ms)."""
    import numpy as np
    import torch

    from graders.sandbox import wire

    _warm_up(torch, np)
    header, parts = wire.encode([torch.randn(2, 3), np.ones(2), {"k": 1}])
    payload = bytearray(b"".join(parts))
    wire.decode(header, payload)


def _child_main(plan: Plan, spec: ChildSpec, probe: bool) -> None:
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD, signal.SIGUSR1, signal.SIGUSR2):
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    devnull = os.open("/dev/null", os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(spec.out_fd, 1)
    os.dup2(spec.out_fd, 2)
    _close_all_but({0, 1, 2, spec.sock_fd} | {r.fd for r in plan.rules if r.fd >= 0})
    from graders.sandbox import wire

    sock = socket.socket(fileno=spec.sock_fd)
    try:
        failures = _enter(plan, spec, probe=probe)
        os.environ["HOME"] = os.environ["TMPDIR"] = spec.workdir
        tempfile.tempdir = spec.workdir
        if spec.spare:  # fully isolated: warm up, tell the server, then wait for a grader's first request
            _warm_spare()
            wire.send_frame(sock, {"ready": True})
    except Exception as exc:  # noqa: BLE001 - report the failure to the grader, then leave
        wire.send_frame(sock, {"setup_error": f"{type(exc).__name__}: {exc}"})
        os._exit(EXIT_SETUP_FAILED)
    if probe:
        try:
            sanity = _sanity()
        except BaseException as exc:  # noqa: BLE001
            sanity = f"{type(exc).__name__}: {exc}"
        wire.send_frame(sock, {"failures": failures, "sanity": sanity})
        os._exit(0)
    from graders.sandbox.runtime import Runtime

    Runtime(sock, int(spec.limits["output_bytes"])).serve()


# --- the server ------------------------------------------------------------------------------


class ForkServer:
    def __init__(self, plan: Plan, socket_path: str, work_root: str, spares: int = 0) -> None:
        self.plan = plan
        self.work_root = work_root
        self.socket_path = socket_path
        self.sel = selectors.DefaultSelector()
        self.children: dict[int, Child] = {}
        self.by_conn: dict[int, Child] = {}
        self.slots: set[int] = set()
        self.seq = 0
        self.stopping = False
        self.own_pidns = os.open("/proc/self/ns/pid", os.O_RDONLY)
        self.pid = os.getpid()
        self.listener: socket.socket | None = None
        self.spare_target = spares
        self.spares: list[Child] = []
        self.spare_limits: dict[str, Any] = dict(DEFAULT_LIMITS)
        self.spare_failures = 0
        self.stats = {"spares_used": 0, "forked_on_demand": 0}

    # -- spawning ---------------------------------------------------------------------------

    def _fork(
        self, limits: dict[str, Any], *, probe: bool, spare: bool = False
    ) -> tuple[Child, socket.socket, int]:
        slot = min(set(range(len(self.slots) + 1)) - self.slots)
        if self.plan.root:
            if slot >= self.plan.uid_span:  # never a uid outside the block this server holds
                raise OSError(errno.EAGAIN, f"all {self.plan.uid_span} uids of this server's block in use")
            uid = gid = self.plan.uid_base + slot
        else:
            uid, gid = os.getuid(), os.getgid()
        self.seq += 1
        workdir = os.path.join(self.work_root, str(self.seq))
        os.mkdir(workdir, 0o700)
        if self.plan.root:
            os.chown(workdir, uid, gid)
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        out_fd = os.memfd_create("submission-output", 0)
        pidns = self.plan.on("pidns")
        try:
            pid = self._fork_in_new_pidns() if pidns else os.fork()
        except OSError:
            ours.close()
            theirs.close()
            os.close(out_fd)
            self._remove_workdir(workdir)
            raise
        if pid == 0:
            try:
                spec = ChildSpec(slot, uid, gid, workdir, theirs.fileno(), out_fd, limits, self.pid, spare)
                _child_main(self.plan, spec, probe)
            finally:
                os._exit(EXIT_SETUP_FAILED)
        theirs.close()
        self.slots.add(slot)
        # A spare's clock starts when it is handed out (_take_spare), not now.
        deadline = math.inf if spare else time.monotonic() + float(limits["wall_seconds"]) + KILL_GRACE_S
        child = Child(pid, os.pidfd_open(pid), slot, workdir, deadline, None, spare=spare)
        self.children[pid] = child
        return child, ours, out_fd

    def _fork_in_new_pidns(self) -> int:
        """fork() with the child as PID 1 of a new PID namespace; the server stays where it was."""
        iso.unshare(iso.CLONE_NEWPID)  # applies to the next fork only...
        try:
            pid = os.fork()
        except OSError:
            iso.setns(self.own_pidns, iso.CLONE_NEWPID)
            raise
        if pid != 0:
            iso.setns(self.own_pidns, iso.CLONE_NEWPID)  # ...and is undone right after it
        return pid

    def probe(self) -> None:
        """Fork one child that tries every layer; keep the ones that worked."""
        plan = self.plan
        if "pidns" not in plan.layers:
            try:  # the PID namespace is the server's part: unshare before fork, setns back after
                probe_pid = self._fork_in_new_pidns()
                if probe_pid == 0:
                    os._exit(0)
                os.waitpid(probe_pid, 0)
                plan.layers["pidns"] = LayerStatus(True, "each child is PID 1 of its own PID namespace")
            except OSError as exc:
                plan.layers["pidns"] = LayerStatus(False, f"cannot create PID namespaces: {exc}")
        limits = dict(DEFAULT_LIMITS, wall_seconds=30)
        child, sock, out_fd = self._fork(limits, probe=True)
        try:
            from graders.sandbox import wire

            report, _ = wire.recv_frame(sock, max_bytes=1 << 20, deadline=time.monotonic() + 60)
        finally:
            sock.close()
            self._reap(child, block=True)
            output = os.pread(out_fd, 4096, 0).decode(errors="replace")
            os.close(out_fd)
        if "setup_error" in report:
            raise RuntimeError(f"the sandbox probe failed: {report['setup_error']}\n{output}")
        failures: dict[str, str] = report["failures"]
        if report["sanity"] != "ok":
            raise RuntimeError(f"a sandboxed child cannot run torch: {report['sanity']}\n{output}")
        details = {
            "netns": "no network: a network namespace with only a down loopback",
            "ipcns": (
                "an IPC namespace of its own: SysV IPC and POSIX message queues made inside vanish "
                "with the child; the host's are out of sight"
            ),
            "mountns": (
                "temp folder is a private tmpfs capped at disk_bytes; "
                "the server's folder and /dev/shm are hidden"
            ),
            "uid": (
                f"each child runs as uid/gid {plan.uid_base}+slot with no supplementary groups "
                f"(uids {plan.uid_base}..{plan.uid_base + plan.uid_span - 1}, this server's own block)"
            ),
            "userns": "children drop every capability they hold in the server's user namespace",
            "rlimits": "CPU, address space, file size, open files" + (", processes" if plan.root else ""),
            "landlock": (
                f"ABI {plan.landlock_abi}: reads only the Python installation ({len(plan.rules)} rules), "
                "writes only its temp folder"
                + (", no TCP" if plan.landlock_abi >= 4 else "")
                + (", signals and abstract sockets scoped" if plan.landlock_abi >= 6 else "")
            ),
            "seccomp": "no new processes, exec, sockets, ptrace, mounts, namespaces or SysV/POSIX-mqueue IPC",
        }
        for layer, detail in details.items():
            if layer in plan.layers and not plan.layers[layer].active:
                continue
            if layer in failures:
                plan.layers[layer] = LayerStatus(False, failures[layer])
            else:
                plan.layers[layer] = LayerStatus(True, detail)
        if not plan.on("mountns"):
            os.chmod(self.work_root, 0o711)

    # -- events -----------------------------------------------------------------------------

    def _send(self, conn: socket.socket, message: dict[str, Any], fds: list[int] | None = None) -> None:
        data = json.dumps(message).encode()
        try:
            if fds:
                socket.send_fds(conn, [data], fds)
            else:
                conn.send(data)
        except OSError:
            pass

    def _accept(self) -> None:
        assert self.listener is not None
        try:
            conn, _ = self.listener.accept()
        except OSError:
            return
        creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)
        peer_pid, peer_uid = int.from_bytes(creds[0:4], "little"), int.from_bytes(creds[4:8], "little")
        if peer_pid in self.children or peer_uid not in (0, os.geteuid()):
            conn.close()  # a sandboxed child, or someone else
            return
        conn.settimeout(2.0)
        self.sel.register(conn, selectors.EVENT_READ, ("conn", conn))

    def _on_conn(self, conn: socket.socket) -> None:
        try:
            data = conn.recv(1 << 16)
        except OSError:
            data = b""
        if not data:
            self._drop_conn(conn)
            return
        try:
            request = json.loads(data)
            op = request.get("op")
        except (ValueError, AttributeError):
            self._drop_conn(conn)
            return
        if op == "spawn":
            self._spawn(conn, request.get("limits") or {})
        elif op == "kill":
            child = self.by_conn.get(conn.fileno())
            if child is not None:
                self._kill(child, "grader")
                if self.plan.on("seccomp"):
                    # SIGKILL stops every thread of it before its next instruction in user space,
                    # and under seccomp it cannot have started a process: nothing of it runs any
                    # more. The grader need not wait for the exit report (tearing down its memory
                    # and namespaces takes the kernel 5-20 ms); the exit report follows.
                    self._send(conn, {"event": "killed"})
        elif op == "describe":
            self._send(conn, {"ok": True, "isolation": self.plan.describe()})
        elif op == "stats":
            spares = {
                "spares_ready": [c.pid for c in self.spares if c.ready],
                "spare_target": self.spare_target,
            }
            self._send(conn, {"ok": True, **self.stats, **spares})
        else:
            self._send(conn, {"ok": False, "error": f"unknown op {op!r}"})

    def _spawn(self, conn: socket.socket, raw: dict[str, Any]) -> None:
        if conn.fileno() in self.by_conn:
            self._send(conn, {"ok": False, "error": "one child per connection"})
            return
        try:
            limits = {k: raw.get(k, default) for k, default in DEFAULT_LIMITS.items()}
            for key, value in limits.items():
                if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                    raise ValueError(f"bad limit {key}={value!r}")
            child = self._take_spare(limits)
            if child is None:
                child, sock, out_fd = self._fork(limits, probe=False)
                self.sel.register(child.pidfd, selectors.EVENT_READ, ("exit", child))
                self.stats["forked_on_demand"] += 1
            else:
                assert child.sock is not None and child.out_fd is not None
                sock, out_fd, child.sock, child.out_fd = child.sock, child.out_fd, None, None
                self.stats["spares_used"] += 1
        except (OSError, ValueError) as exc:
            self._send(conn, {"ok": False, "error": f"{type(exc).__name__}: {exc}"})
            return
        child.conn = conn
        self.by_conn[conn.fileno()] = child
        self.spare_failures = 0  # spares that kept dying are tried again after each request
        self._send(conn, {"ok": True, "pid": child.pid, "spare": child.spare}, [sock.fileno(), out_fd])
        sock.close()
        os.close(out_fd)

    # -- spares: children forked and isolated ahead of the request that takes them -------------

    def _replenish(self) -> None:
        """Fork spares until there are spare_target of them (alive, ready or getting ready).

        While a handed-out child is grading, new spares wait unless none is left: a fork of this
        process and the new child's set-up take milliseconds of CPU that the grading needs on a
        small machine, and the server would answer that child's kill only after its fork.
        """
        grading = any(child.conn is not None for child in self.children.values())
        while (
            not self.stopping
            and len(self.spares) < self.spare_target
            and self.spare_failures < MAX_SPARE_FAILURES
            and not (grading and self.spares)
        ):
            try:
                child, sock, out_fd = self._fork(self.spare_limits, probe=False, spare=True)
            except OSError:
                self.spare_failures += 1
                return
            child.sock, child.out_fd = sock, out_fd
            self.spares.append(child)
            self.sel.register(child.pidfd, selectors.EVENT_READ, ("exit", child))
            self.sel.register(sock, selectors.EVENT_READ, ("ready", child))

    def _on_ready(self, child: Child, timeout: float = 1.0) -> bool:
        """Read a spare's first message: {"ready": true} once every layer is on; else discard it."""
        assert child.sock is not None
        try:
            self.sel.unregister(child.sock)
        except (KeyError, ValueError):
            pass
        from graders.sandbox import wire

        try:
            message, _ = wire.recv_frame(child.sock, max_bytes=1 << 16, deadline=time.monotonic() + timeout)
            child.sock.settimeout(None)
        except (OSError, EOFError, ValueError, wire.WireError):
            message = None
        if message == {"ready": True}:
            child.ready = True
            return True
        self.spare_failures += 1
        self._discard_spare(child, "spare setup failed")
        return False

    def _discard_spare(self, child: Child, reason: str, *, kill: bool = True) -> None:
        if child in self.spares:
            self.spares.remove(child)
        if child.sock is not None:
            try:
                self.sel.unregister(child.sock)
            except (KeyError, ValueError):
                pass
            child.sock.close()
            child.sock = None
        if child.out_fd is not None:
            os.close(child.out_fd)
            child.out_fd = None
        if kill:
            self._kill(child, reason)  # reaped through its pidfd like any child

    def _take_spare(self, limits: dict[str, Any]) -> Child | None:
        """A ready, live spare forked with these limits, its clock started; None: fork on demand."""
        if limits != self.spare_limits:  # the next spares get the limits requests now use
            for child in list(self.spares):
                self._discard_spare(child, "stale limits")
            self.spare_limits = dict(limits)
            return None
        while self.spares:
            child = self.spares.pop(0)
            if not child.ready and not self._on_ready(child, SPARE_WAIT_S):
                continue
            if child.killed is not None or select.select([child.pidfd], [], [], 0)[0]:
                self._discard_spare(child, child.killed or "spare died")  # exited since it was ready
                continue
            child.deadline = time.monotonic() + float(limits["wall_seconds"]) + KILL_GRACE_S
            return child
        return None

    def _kill(self, child: Child, reason: str) -> None:
        if child.killed is None:
            child.killed = reason
        try:
            signal.pidfd_send_signal(child.pidfd, signal.SIGKILL)
        except OSError:
            pass
        if not self.plan.on("pidns"):
            try:
                os.killpg(child.pid, signal.SIGKILL)  # the child is its process group's leader
            except OSError:
                pass

    def _drop_conn(self, conn: socket.socket) -> None:
        child = self.by_conn.pop(conn.fileno(), None)
        if child is not None:
            child.conn = None
            self._kill(child, child.killed or "disconnect")
        self.sel.unregister(conn)
        conn.close()

    def _reap(self, child: Child, *, block: bool = False) -> None:
        try:
            pid, status, usage = os.wait4(child.pid, 0 if block else os.WNOHANG)
        except ChildProcessError:
            return
        if pid != 0:
            self._finish(child, status, usage)

    def _finish(self, child: Child, status: int, usage: Any) -> None:
        code = os.waitstatus_to_exitcode(status)
        event = {
            "event": "exit",
            "code": code if code >= 0 else None,
            "signal": -code if code < 0 else None,
            "cpu": round(usage.ru_utime + usage.ru_stime, 3),
            "killed": child.killed,
        }
        if child.conn is not None:
            self._send(child.conn, event)
            self.by_conn.pop(child.conn.fileno(), None)
        if child.spare and (child in self.spares or child.sock is not None):  # died before hand-out
            if child.killed is None:
                self.spare_failures += 1
            self._discard_spare(child, child.killed or "spare died", kill=False)  # already reaped
        try:
            self.sel.unregister(child.pidfd)
        except (KeyError, ValueError):
            pass
        os.close(child.pidfd)
        self.children.pop(child.pid, None)
        self.slots.discard(child.slot)
        self._remove_workdir(child.workdir)

    @staticmethod
    def _remove_workdir(path: str) -> None:
        try:
            os.rmdir(path)  # with a mount namespace it is an empty mount point here
        except OSError:
            shutil.rmtree(path, ignore_errors=True)

    def _reap_orphans(self) -> None:
        while True:  # also grandchildren re-parented to us (subreaper) when there is no PID namespace
            try:
                pid, status, usage = os.wait4(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            child = self.children.get(pid)
            if child is not None:
                self._finish(child, status, usage)

    # -- main loop --------------------------------------------------------------------------

    def listen(self) -> None:
        old = os.umask(0o177)  # the socket file is 0600, in a 0700 folder
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.listener.bind(self.socket_path)
        os.umask(old)
        self.listener.listen(128)
        self.listener.setblocking(False)

    def serve(self) -> None:
        assert self.listener is not None, "listen() first"
        self.sel.register(self.listener, selectors.EVENT_READ, ("accept", None))
        self.sel.register(0, selectors.EVENT_READ, ("stdin", None))
        while not self.stopping:
            events = self.sel.select(0)  # what is waiting goes first: a spare's fork can wait, a grader not
            if not events:
                self._replenish()  # at start, and once a request took a spare
                now = time.monotonic()
                timeout = min((c.deadline - now for c in self.children.values()), default=1.0)
                events = self.sel.select(max(0.0, min(timeout, 1.0)))
            for key, _ in events:
                kind, obj = key.data
                if kind == "accept":
                    self._accept()
                elif kind == "conn":
                    self._on_conn(obj)
                elif kind == "exit":
                    self._reap(obj)
                elif kind == "ready":
                    if obj in self.spares and obj.sock is not None and not obj.ready:
                        self._on_ready(obj)
                elif kind == "stdin":
                    if not os.read(0, 4096):
                        self.stopping = True
            now = time.monotonic()
            for child in list(self.children.values()):
                if child.deadline <= now:
                    self._kill(child, child.killed or "deadline")
            self._reap_orphans()

    def shutdown(self) -> None:
        self.stopping = True
        for child in list(self.spares):
            self._discard_spare(child, "shutdown")
        for child in list(self.children.values()):
            self._kill(child, "shutdown")
        for child in list(self.children.values()):
            try:
                self._reap(child, block=True)
            except ChildProcessError:
                pass
        if self.listener is not None:
            self.listener.close()
            try:
                os.unlink(self.socket_path)
            except OSError:
                pass


# --- start-up --------------------------------------------------------------------------------


def _enter_user_namespace() -> LayerStatus:
    """Unprivileged: become PID 1 of a new user+PID namespace pair (forks; the parent relays)."""
    uid, gid = os.getuid(), os.getgid()
    try:
        iso.unshare(iso.CLONE_NEWUSER)
    except OSError as exc:
        return LayerStatus(False, f"user namespaces unavailable ({exc}): children share the user's uid")
    iso.write_id_maps(uid, gid)
    iso.unshare(iso.CLONE_NEWPID)
    pid = os.fork()
    if pid > 0:  # the outer process: wait for the real server, pass on a SIGTERM
        signal.signal(signal.SIGTERM, lambda *_: os.kill(pid, signal.SIGKILL))
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        while True:
            try:
                _, status = os.waitpid(pid, 0)
                break
            except InterruptedError:
                continue
        os._exit(os.waitstatus_to_exitcode(status) & 0xFF)
    iso.prctl(iso.PR_SET_PDEATHSIG, signal.SIGKILL)
    return LayerStatus(True, "the server runs in a user namespace; children drop all capabilities")


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m graders.sandbox.forkserver")
    parser.add_argument("--socket", required=True)
    parser.add_argument("--work", required=True, help="folder for the children's temp folders")
    parser.add_argument("--hide", action="append", default=[], help="hidden from children (mountns)")
    parser.add_argument("--protect", action="append", default=[], help="never readable by children")
    parser.add_argument("--uid-base", type=int, default=61440, help="first uid the sandbox may use")
    parser.add_argument("--uid-count", type=int, default=1024, help="uids it may use, from --uid-base")
    parser.add_argument("--uid-lock-dir", default=uid_ranges.LOCK_DIR, help="where blocks are claimed")
    parser.add_argument("--disable", action="append", default=[], choices=iso.LAYERS)
    parser.add_argument("--spares", type=int, default=0, help="children kept forked and isolated ahead")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    root = os.geteuid() == 0
    uids: uid_ranges.UidRange | None = None
    if root:  # first, before the slow imports: with no free block there is nothing to start
        try:
            uids = uid_ranges.claim(args.uid_base, args.uid_count, args.uid_lock_dir)
        except (uid_ranges.NoFreeUidRange, OSError) as exc:
            sys.stdout.write(json.dumps({"ready": False, "error": str(exc)}) + "\n")
            sys.stdout.flush()
            return 1
    layers: dict[str, LayerStatus] = {}
    if root:
        layers["userns"] = LayerStatus(False, "running as root: each child gets its own uid instead")
    elif "userns" in args.disable:
        layers["userns"] = LayerStatus(False, "disabled by configuration")
    else:
        layers["userns"] = _enter_user_namespace()  # before torch: unshare needs one thread
    if not root:
        layers["uid"] = LayerStatus(False, "not root: children keep the user's uid")
    if not layers["userns"].active and not root:
        for layer in ("pidns", "netns", "ipcns", "mountns"):
            layers[layer] = LayerStatus(False, "needs root or a user namespace")
    for layer in args.disable:
        layers[layer] = LayerStatus(False, "disabled by configuration")

    os.environ["OMP_NUM_THREADS"] = "1"
    import numpy as np
    import torch

    torch.set_num_threads(1)  # before any torch op: a thread pool must not exist at fork time
    import importlib

    for name in PREIMPORT + ["torch.nn", "torch.nn.functional", "numpy.linalg", "numpy.random"]:
        importlib.import_module(name)
    _warm_up(torch, np)
    from graders.sandbox import runtime, wire  # noqa: F401 - loaded once, shared by every child

    abi = iso.landlock_abi()
    # The folder holding the graders package is always protected, whatever the caller says.
    protected = [*args.protect, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))]
    # /dev/shm (POSIX shared memory, named semaphores) is shared by every process of the host:
    # each child sees an empty read-only one instead (Landlock also refuses it).
    hide = [*args.hide, *(["/dev/shm"] if os.path.isdir("/dev/shm") else [])]
    plan = Plan(
        root=root,
        uid_base=uids.first if uids else 0,
        uid_span=uids.size if uids else 0,
        hide=hide,
        protected=protected,
        layers=layers,
    )
    if abi and "landlock" not in layers:
        plan.landlock_abi = abi
        plan.rules = iso.landlock_rules(protected)
        for rule in plan.rules:
            rule.fd = os.open(rule.path, iso.O_PATH)
    elif "landlock" not in layers:
        layers["landlock"] = LayerStatus(
            False, "Landlock is unavailable: an old kernel, not x86_64, or a container's seccomp profile"
        )
    if not iso.X86_64 and "seccomp" not in layers:
        layers["seccomp"] = LayerStatus(False, "the filter is written for x86_64 only")
    _scrub_interpreter(protected)
    try:
        iso.prctl(iso.PR_SET_CHILD_SUBREAPER, 1)
    except OSError:
        pass
    server = ForkServer(plan, args.socket, args.work, max(0, args.spares))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        server.probe()
        server.listen()
        gc.collect()
        gc.freeze()  # children's collections skip (and so do not copy-on-write) the inherited objects
        ready = {
            "ready": True,
            "pid": os.getpid(),
            "root": root,
            "isolation": plan.describe(),
            "uids": [plan.uid_base, plan.uid_base + plan.uid_span - 1] if uids else None,
        }
        sys.stdout.write(json.dumps(ready) + "\n")
        sys.stdout.flush()
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.close(devnull)
        server.serve()
    except Exception:
        traceback.print_exc()
        return 1
    finally:
        server.shutdown()
    return 0


def _warm_up(torch: Any, np: Any) -> None:
    """Run the ops submissions use once, so lazy initialisation happens here and not per child."""
    x = torch.randn(2, 4, 8)
    w = torch.randn(8, 24)
    q, k, v = (x @ w).split(8, dim=-1)
    scores = (q @ k.transpose(-2, -1)) / 8**0.5
    mask = torch.tril(torch.ones(4, 4, dtype=torch.bool))
    torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1) @ v
    torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    torch.nn.Linear(8, 8, bias=False)(x).sum()
    torch.cat([x, x], dim=-2).view(2, 8, 2, 4).transpose(1, 2).contiguous().repeat_interleave(2, dim=1)
    a = np.random.default_rng(0).standard_normal((4, 8))
    e = np.exp(a - a.max(axis=-1, keepdims=True))
    (e / e.sum(axis=-1, keepdims=True)) @ a.T
    np.argmax(a, axis=-1)


if __name__ == "__main__":
    sys.exit(main())

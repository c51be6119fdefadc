"""The fork server's loop: fork isolated children, hand them to graders, kill and reap them.

`ForkServer` serves grader connections on a unix SOCK_SEQPACKET socket (the protocol is in
graders/sandbox/forkserver/__main__.py's docstring), keeps spares forked and isolated ahead of the
requests that take them, enforces its own backstop on every child's wall clock, and reaps
every child (and, without a PID namespace, whatever they re-parented to it). What a child
does once forked is graders/sandbox/child_side.py; the fork itself is forking.py.
"""

from __future__ import annotations

import json
import os
import select
import selectors
import signal
import socket
import time
from typing import Any

from graders.limits import Limits
from graders.sandbox.forkserver.forking import KILL_GRACE_S, Child, Forker
from graders.sandbox.isolation import Plan

DEFAULT_LIMITS = Limits().to_dict()
SPARE_WAIT_S = 2.0  # how long a request waits for a spare still entering its layers
MAX_SPARE_FAILURES = 3  # spares dying before use this many times in a row: stop making them


class ForkServer(Forker):
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
                child, sock, out_fd = self.fork(limits, probe=False)
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
                child, sock, out_fd = self.fork(self.spare_limits, probe=False, spare=True)
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

    def reap(self, child: Child, *, block: bool = False) -> None:
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
                    self.reap(obj)
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
                self.reap(child, block=True)
            except ChildProcessError:
                pass
        if self.listener is not None:
            self.listener.close()
            try:
                os.unlink(self.socket_path)
            except OSError:
                pass

"""Forking one child: `Forker`, the half of the fork server (graders/sandbox/forkserver/server.py)
that gives a child its slot (uid, gid, working folder), its sockets and its output file, forks it
(as PID 1 of a new PID namespace when the plan has one) and hands it to
graders/sandbox/child_side.py. `Child` is what the server keeps of each child.
"""

from __future__ import annotations

import errno
import math
import os
import shutil
import socket
import time
from dataclasses import dataclass
from typing import Any

from graders.sandbox import isolation as iso
from graders.sandbox.child_side import ChildSpec, child_main
from graders.sandbox.isolation import Plan

EXIT_SETUP_FAILED = 70
KILL_GRACE_S = 5.0  # the server's own backstop, past the grader's wall clock


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


class Forker:
    """Forks children into free slots; ForkServer serves, reaps and keeps the spares."""

    plan: Plan
    work_root: str
    slots: set[int]
    seq: int
    own_pidns: int
    pid: int
    children: dict[int, Child]

    def fork(
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
            pid = self.fork_in_new_pidns() if pidns else os.fork()
        except OSError:
            ours.close()
            theirs.close()
            os.close(out_fd)
            self._remove_workdir(workdir)
            raise
        if pid == 0:
            try:
                spec = ChildSpec(slot, uid, gid, workdir, theirs.fileno(), out_fd, limits, self.pid, spare)
                child_main(self.plan, spec, probe)
            finally:
                os._exit(EXIT_SETUP_FAILED)
        theirs.close()
        self.slots.add(slot)
        # A spare's clock starts when it is handed out (_take_spare), not now.
        deadline = math.inf if spare else time.monotonic() + float(limits["wall_seconds"]) + KILL_GRACE_S
        child = Child(pid, os.pidfd_open(pid), slot, workdir, deadline, None, spare=spare)
        self.children[pid] = child
        return child, ours, out_fd

    def fork_in_new_pidns(self) -> int:
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

    @staticmethod
    def _remove_workdir(path: str) -> None:
        try:
            os.rmdir(path)  # with a mount namespace it is an empty mount point here
        except OSError:
            shutil.rmtree(path, ignore_errors=True)

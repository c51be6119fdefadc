"""The isolation layers a submission's process enters, each best-effort and reported.

Layers, in the order a child applies them (graders/sandbox/child_side.py):

- pidns    a new PID namespace: the child is its PID 1, so everything it might start dies
           with it (the fork server unshares CLONE_NEWPID before the fork, then setns back).
- netns    a new network namespace: no interfaces but a down loopback, so no network.
- ipcns    a new IPC namespace: SysV shared memory, message queues, semaphores and POSIX message
           queues made inside vanish with the child, and the host's (or another child's) are
           out of sight.
- mountns  a new mount namespace: its temp folder is a size-capped tmpfs (disk_bytes); the
           fork server's own folder (its control socket) and /dev/shm (POSIX shared memory and
           named semaphores) are hidden under empty read-only tmpfs.
- rootfs   in that mount namespace, a new root holding only Landlock's grant (bind mounts), the
           symlinks on the way to it and the temp folder: stat(), access(), readlink() of any
           other path find nothing (graders/sandbox/rootfs.py).
- uid      as root: setgroups([]), then a uid/gid of its own: the first uid of the block this
           fork server claimed (graders/sandbox/uid_ranges.py) + the child's slot.
- userns   as an ordinary user: the fork server runs in a user namespace (so it may create
           the namespaces above) and each child drops every capability it has there.
- rlimits  CPU, address space, file size, open files, processes (uid mode), core dumps = 0.
- landlock read-only access to the Python installation (stdlib, site-packages without our own
           packages, shared libraries) and a few devices; read-write only in its temp folder;
           no TCP bind/connect; no signals or abstract sockets outside its domain.
- seccomp  a BPF filter: no new processes (fork/vfork/clone without CLONE_THREAD/clone3),
           no exec, no new sockets (socketpair only), no ptrace/process_vm_*, no namespaces or mounts,
           no signals/rlimits/priorities aimed at other processes, no io_uring, bpf, keyrings,
           modules, no SysV IPC or POSIX message queues (the IPC namespace again, in depth),
           and no way to clear its parent-death signal.

Everything here is plain ctypes over libc's syscall() (graders/sandbox/syscalls.py); no
dependency. x86_64 only for the seccomp and Landlock syscall numbers (elsewhere those layers
report themselves inactive). The namespaces, uid, capabilities and rlimits are here; Landlock's
ruleset is graders/sandbox/landlock.py and seccomp's filter graders/sandbox/seccomp.py, both
re-exported, so the fork server reaches every layer through this module.
"""

from __future__ import annotations

import ctypes
import os
import resource
import struct
from dataclasses import dataclass, field
from typing import Any

from graders.sandbox.landlock import (
    LL_TEMP_DIR,
    LandlockRule,
    landlock_abi,
    landlock_fs_rights,
    landlock_restrict,
    landlock_rules,
)
from graders.sandbox.seccomp import DENIED, SYSCALLS, seccomp_filter, seccomp_load
from graders.sandbox.syscalls import (
    AF_UNIX,
    CLONE_NEWIPC,
    CLONE_NEWNET,
    CLONE_NEWNS,
    CLONE_NEWPID,
    CLONE_NEWUSER,
    CLONE_THREAD,
    MS_NODEV,
    MS_NOEXEC,
    MS_NOSUID,
    MS_PRIVATE,
    MS_RDONLY,
    MS_REC,
    O_PATH,
    PR_CAP_AMBIENT,
    PR_CAP_AMBIENT_CLEAR_ALL,
    PR_SET_CHILD_SUBREAPER,
    PR_SET_DUMPABLE,
    PR_SET_NO_NEW_PRIVS,
    PR_SET_PDEATHSIG,
    PR_SET_PTRACER,
    PR_SET_SECCOMP,
    SECCOMP_MODE_FILTER,
    X86_64,
)
from graders.sandbox.syscalls import fail as _fail
from graders.sandbox.syscalls import libc as _libc

# Every layer's calls and constants, from one module (landlock.py and seccomp.py hold two layers).
__all__ = [
    "AF_UNIX",
    "CLONE_NEWIPC",
    "CLONE_NEWNET",
    "CLONE_NEWNS",
    "CLONE_NEWPID",
    "CLONE_NEWUSER",
    "CLONE_THREAD",
    "DENIED",
    "LAYERS",
    "LL_TEMP_DIR",
    "LandlockRule",
    "LayerStatus",
    "MS_NODEV",
    "MS_NOEXEC",
    "MS_NOSUID",
    "MS_PRIVATE",
    "MS_RDONLY",
    "MS_REC",
    "O_PATH",
    "PR_CAP_AMBIENT",
    "PR_CAP_AMBIENT_CLEAR_ALL",
    "PR_SET_CHILD_SUBREAPER",
    "PR_SET_DUMPABLE",
    "PR_SET_NO_NEW_PRIVS",
    "PR_SET_PDEATHSIG",
    "PR_SET_PTRACER",
    "PR_SET_SECCOMP",
    "Plan",
    "SECCOMP_MODE_FILTER",
    "SYSCALLS",
    "X86_64",
    "address_space_now",
    "drop_capabilities",
    "drop_to_uid",
    "landlock_abi",
    "landlock_fs_rights",
    "landlock_restrict",
    "landlock_rules",
    "mount",
    "prctl",
    "seccomp_filter",
    "seccomp_load",
    "set_rlimits",
    "setns",
    "unshare",
    "write_id_maps",
]

LAYERS = ("pidns", "netns", "ipcns", "mountns", "rootfs", "uid", "userns", "rlimits", "landlock", "seccomp")


def unshare(flags: int) -> None:
    if _libc.unshare(ctypes.c_int(flags)) != 0:
        raise _fail("unshare")


def setns(fd: int, nstype: int) -> None:
    if _libc.setns(ctypes.c_int(fd), ctypes.c_int(nstype)) != 0:
        raise _fail("setns")


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    def enc(s: str | None) -> bytes | None:
        return None if s is None else s.encode()

    ok = _libc.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data))
    if ok != 0:
        raise _fail(f"mount {target}")


def prctl(option: int, arg2: int = 0, arg3: int = 0) -> None:
    ok = _libc.prctl(ctypes.c_int(option), ctypes.c_ulong(arg2), ctypes.c_ulong(arg3), 0, 0)
    if ok != 0:
        raise _fail(f"prctl({option})")


def write_id_maps(uid: int, gid: int) -> None:
    """Map our own uid/gid into a fresh user namespace (the only mapping allowed unprivileged)."""
    with open("/proc/self/setgroups", "w") as f:
        f.write("deny")
    with open("/proc/self/uid_map", "w") as f:
        f.write(f"{uid} {uid} 1")
    with open("/proc/self/gid_map", "w") as f:
        f.write(f"{gid} {gid} 1")


def drop_capabilities() -> None:
    """Clear effective, permitted, inheritable and ambient capabilities (capset, v3)."""
    header = struct.pack("<Ii", 0x20080522, 0)
    data = bytes(24)
    hdr_buf = ctypes.create_string_buffer(header, len(header))
    data_buf = ctypes.create_string_buffer(data, len(data))
    _libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    if _libc.syscall(126, hdr_buf, data_buf) != 0:  # capset
        raise _fail("capset")


def drop_to_uid(uid: int, gid: int) -> None:
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)  # root -> uid: every capability goes too


# --- rlimits ---------------------------------------------------------------------------------


def address_space_now(status_fd: int | None = None) -> int:
    """VmSize in bytes, from /proc/self/status (or a descriptor of it opened earlier)."""
    if status_fd is None:
        with open("/proc/self/status", "rb") as f:
            text = f.read()
    else:
        text = os.pread(status_fd, 1 << 16, 0)
    for line in text.decode(errors="replace").splitlines():
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * 1024
    return 0


def set_rlimits(limits: dict[str, Any], *, baseline_as: int, nproc: bool) -> None:
    cpu = int(limits["cpu_seconds"])
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    address_space = baseline_as + int(limits["memory_bytes"])
    resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))
    size = int(limits["file_size_bytes"])
    resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
    files = int(limits["open_files"])
    resource.setrlimit(resource.RLIMIT_NOFILE, (files, files))
    if nproc:
        procs = int(limits["processes"])
        resource.setrlimit(resource.RLIMIT_NPROC, (procs, procs))


# --- the plan a fork server follows ----------------------------------------------------------


@dataclass
class LayerStatus:
    active: bool
    detail: str

    def to_json(self) -> dict[str, Any]:
        return {"active": self.active, "detail": self.detail}


@dataclass
class Plan:
    """What every child of one fork server applies; decided once, at start-up, by a probe."""

    root: bool
    uid_base: int  # the first uid of this server's claimed block (root only)
    hide: list[str]  # folders hidden under an empty tmpfs (the fork server's own)
    protected: list[str]  # project folders: never readable, removed from sys.path
    uid_span: int = 0  # uids in that block: at most this many children at once
    landlock_abi: int = 0
    rules: list[LandlockRule] = field(default_factory=list)
    # rootfs: the paths a child's file system holds (Landlock's grant), the symlinked names on
    # the way to them, and the empty folder its new root is mounted on (graders/sandbox/rootfs.py).
    view: list[str] = field(default_factory=list)
    aliases: list[str] = field(default_factory=list)
    stage: str = ""
    layers: dict[str, LayerStatus] = field(default_factory=dict)

    def on(self, layer: str) -> bool:
        status = self.layers.get(layer)
        return status is not None and status.active

    def describe(self) -> dict[str, Any]:
        return {name: self.layers[name].to_json() for name in LAYERS if name in self.layers}

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

Everything here is plain ctypes over libc's syscall(); no dependency. x86_64 only for the
seccomp and Landlock syscall numbers (elsewhere those layers report themselves inactive).
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import resource
import struct
import sys
import sysconfig
from dataclasses import dataclass, field
from typing import Any

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long

X86_64 = platform.machine() == "x86_64"

CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
CLONE_THREAD = 0x00010000

MS_RDONLY = 0x1
MS_NOSUID = 0x2
MS_NODEV = 0x4
MS_NOEXEC = 0x8
MS_REC = 0x4000
MS_PRIVATE = 1 << 18

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_SECCOMP = 22
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
PR_SET_PTRACER = 0x59616D61
SECCOMP_MODE_FILTER = 2

AF_UNIX = 1
O_PATH = getattr(os, "O_PATH", 0o10000000)

LAYERS = ("pidns", "netns", "ipcns", "mountns", "uid", "userns", "rlimits", "landlock", "seccomp")


def _fail(what: str) -> OSError:
    err = ctypes.get_errno()
    return OSError(err, f"{what}: {os.strerror(err)}")


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


def address_space_now() -> int:
    with open("/proc/self/status") as f:
        for line in f:
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


# --- Landlock --------------------------------------------------------------------------------

LL_EXECUTE = 1 << 0
LL_WRITE_FILE = 1 << 1
LL_READ_FILE = 1 << 2
LL_READ_DIR = 1 << 3
LL_REMOVE_DIR = 1 << 4
LL_REMOVE_FILE = 1 << 5
LL_MAKE_CHAR = 1 << 6
LL_MAKE_DIR = 1 << 7
LL_MAKE_REG = 1 << 8
LL_MAKE_SOCK = 1 << 9
LL_MAKE_FIFO = 1 << 10
LL_MAKE_BLOCK = 1 << 11
LL_MAKE_SYM = 1 << 12
LL_REFER = 1 << 13
LL_TRUNCATE = 1 << 14
LL_IOCTL_DEV = 1 << 15
LL_NET_BIND_TCP = 1 << 0
LL_NET_CONNECT_TCP = 1 << 1
LL_SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0
LL_SCOPE_SIGNAL = 1 << 1

LL_FILE_RIGHTS = LL_EXECUTE | LL_WRITE_FILE | LL_READ_FILE | LL_TRUNCATE | LL_IOCTL_DEV
LL_READ_ONLY = LL_EXECUTE | LL_READ_FILE | LL_READ_DIR
LL_DEVICE_RW = LL_READ_FILE | LL_WRITE_FILE | LL_TRUNCATE | LL_IOCTL_DEV
LL_TEMP_DIR = (
    LL_EXECUTE
    | LL_WRITE_FILE
    | LL_READ_FILE
    | LL_READ_DIR
    | LL_REMOVE_DIR
    | LL_REMOVE_FILE
    | LL_MAKE_DIR
    | LL_MAKE_REG
    | LL_MAKE_SOCK
    | LL_MAKE_FIFO
    | LL_MAKE_SYM
    | LL_REFER
    | LL_TRUNCATE
)
_SYS_LL_CREATE, _SYS_LL_ADD_RULE, _SYS_LL_RESTRICT = 444, 445, 446


def landlock_abi() -> int:
    """The kernel's Landlock ABI version; 0 when Landlock is unavailable."""
    if not X86_64:
        return 0
    version = _libc.syscall(_SYS_LL_CREATE, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    return max(int(version), 0)


def landlock_fs_rights(abi: int) -> int:
    rights = (1 << 13) - 1
    if abi >= 2:
        rights |= LL_REFER
    if abi >= 3:
        rights |= LL_TRUNCATE
    if abi >= 5:
        rights |= LL_IOCTL_DEV
    return rights


@dataclass
class LandlockRule:
    path: str
    access: int
    fd: int = -1  # an O_PATH descriptor the fork server keeps open for its children


def landlock_restrict(abi: int, rules: list[LandlockRule], extra: list[tuple[int, int]]) -> None:
    """Enforce a ruleset on this process: the rules' paths (and `extra` (fd, access) pairs) only."""
    handled = landlock_fs_rights(abi)
    net = LL_NET_BIND_TCP | LL_NET_CONNECT_TCP if abi >= 4 else 0
    scoped = LL_SCOPE_ABSTRACT_UNIX_SOCKET | LL_SCOPE_SIGNAL if abi >= 6 else 0
    if abi >= 6:
        attr = struct.pack("<QQQ", handled, net, scoped)
    elif abi >= 4:
        attr = struct.pack("<QQ", handled, net)
    else:
        attr = struct.pack("<Q", handled)
    attr_buf = ctypes.create_string_buffer(attr, len(attr))
    ruleset = _libc.syscall(_SYS_LL_CREATE, attr_buf, ctypes.c_size_t(len(attr)), ctypes.c_uint32(0))
    if ruleset < 0:
        raise _fail("landlock_create_ruleset")
    try:
        pairs = [(r.fd, r.access) for r in rules if r.fd >= 0] + extra
        for fd, access in pairs:
            rule = ctypes.create_string_buffer(struct.pack("<Qi", access & handled, fd), 12)
            if _libc.syscall(_SYS_LL_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(1), rule, 0) != 0:
                raise _fail("landlock_add_rule")
        if _libc.syscall(_SYS_LL_RESTRICT, ctypes.c_int(ruleset), ctypes.c_uint32(0)) != 0:
            raise _fail("landlock_restrict_self")
    finally:
        os.close(ruleset)


_EXCLUDED_PACKAGES = ("graders", "app", "kvprep", "tests", "questions", "__editable__")


def _under(path: str, roots: list[str]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def landlock_rules(protected: list[str]) -> list[LandlockRule]:
    """What a submission may read: the Python installation, minus anything under `protected`.

    `protected` holds the project's folders (the one holding the graders package, its
    questions and database): nothing under them is granted, except site-packages folders
    (a virtualenv inside the project), whose entries are granted one by one without our own
    packages (graders, app, kvprep's dist-info and editable finder).
    """
    roots = [os.path.realpath(p) for p in protected]
    rules: dict[str, int] = {}

    def grant(path: str, access: int) -> None:
        real = os.path.realpath(path)
        if os.path.exists(real):
            if not os.path.isdir(real):
                access &= LL_FILE_RIGHTS  # a rule on a file may only carry file rights
            rules[real] = rules.get(real, 0) | access

    # Only the installation's own folders: not the current directory, not PYTHONPATH additions.
    prefixes = [os.path.realpath(p) for p in {sys.prefix, sys.base_prefix, sys.exec_prefix}]
    candidates = set(sys.path) | {
        v for k, v in sysconfig.get_paths().items() if k in ("stdlib", "platstdlib", "purelib", "platlib")
    }
    for entry in sorted(p for p in candidates if p and os.path.isabs(p) and os.path.isdir(p)):
        real = os.path.realpath(entry)
        if os.path.basename(real) in ("site-packages", "dist-packages"):
            grant(real, LL_READ_DIR)
            for name in os.listdir(real):
                child = os.path.realpath(os.path.join(real, name))
                if name.startswith(_EXCLUDED_PACKAGES) or (
                    _under(child, roots) and not _under(child, [real])
                ):
                    continue
                grant(child, LL_READ_ONLY)
        elif _under(real, prefixes) and not _under(real, roots):
            grant(real, LL_READ_ONLY)
    # Shared libraries already mapped (torch's, numpy's, libc's) and the system library folder,
    # so that an extension module imported later (ctypes, sqlite3, ...) can load its own.
    libdirs = {sysconfig.get_config_var("LIBDIR") or "", "/usr/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu"}
    with open("/proc/self/maps") as maps:
        for line in maps:
            parts = line.split(maxsplit=5)
            if len(parts) == 6 and parts[5].startswith("/"):
                libdirs.add(os.path.dirname(parts[5].strip()))
    for d in libdirs:
        if d and os.path.isdir(d) and not _under(os.path.realpath(d), roots):
            grant(d, LL_READ_ONLY)
    for f in ("/etc/ld.so.cache", "/etc/localtime", "/dev/zero", "/dev/urandom", "/dev/random"):
        grant(f, LL_READ_FILE)
    grant("/dev/null", LL_DEVICE_RW)
    # Drop rules covered by a broader rule with the same rights.
    kept: list[str] = []
    for path, access in sorted(rules.items()):
        covered = any(
            path.startswith(other.rstrip("/") + "/") and (rules[other] & access) == access
            for other in kept
            if other != path
        )
        if not covered:
            kept.append(path)
    return [LandlockRule(path, rules[path]) for path in kept]


# --- seccomp ---------------------------------------------------------------------------------

# x86_64 syscall numbers.
SYSCALLS = {
    "fork": 57, "vfork": 58, "execve": 59, "execveat": 322, "clone": 56, "clone3": 435,
    "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "kcmp": 312,
    "pidfd_getfd": 438, "pidfd_open": 434, "perf_event_open": 298, "bpf": 321,
    "userfaultfd": 323, "keyctl": 250, "add_key": 248, "request_key": 249, "mount": 165,
    "umount2": 166, "pivot_root": 155, "chroot": 161, "unshare": 272, "setns": 308,
    "init_module": 175, "finit_module": 313, "delete_module": 176, "kexec_load": 246,
    "kexec_file_load": 320, "reboot": 169, "swapon": 167, "swapoff": 168, "acct": 163,
    "quotactl": 179, "quotactl_fd": 443, "open_by_handle_at": 304, "name_to_handle_at": 303,
    "iopl": 172, "ioperm": 173, "settimeofday": 164, "clock_settime": 227, "clock_adjtime": 305,
    "adjtimex": 159, "sethostname": 170, "setdomainname": 171, "io_uring_setup": 425,
    "io_uring_enter": 426, "io_uring_register": 427, "setsid": 112, "setpgid": 109, "mknod": 133,
    "mknodat": 259, "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431,
    "fsmount": 432, "fspick": 433, "mount_setattr": 442, "lookup_dcookie": 212, "vhangup": 153,
    "syslog": 103, "uselib": 134, "fanotify_init": 300, "move_pages": 279, "migrate_pages": 256,
    "socket": 41, "prctl": 157, "kill": 62, "tgkill": 234, "rt_sigqueueinfo": 129,
    "rt_tgsigqueueinfo": 297, "prlimit64": 302, "setpriority": 141, "sched_setaffinity": 203,
    "sched_setscheduler": 144, "sched_setparam": 142, "sched_setattr": 314, "ioprio_set": 251,
    "memfd_secret": 447, "shmget": 29, "shmat": 30, "shmctl": 31, "shmdt": 67, "semget": 64,
    "semop": 65, "semctl": 66, "semtimedop": 220, "msgget": 68, "msgsnd": 69, "msgrcv": 70,
    "msgctl": 71, "mq_open": 240, "mq_unlink": 241, "mq_timedsend": 242, "mq_timedreceive": 243,
    "mq_notify": 244, "mq_getsetattr": 245,
}  # fmt: skip

# Refused outright with EPERM (clone3 with ENOSYS, so that glibc falls back to clone for threads).
DENIED = [
    "fork", "vfork", "execve", "execveat", "ptrace", "process_vm_readv", "process_vm_writev",
    "kcmp", "pidfd_getfd", "perf_event_open", "bpf", "userfaultfd", "keyctl", "add_key",
    "request_key", "mount", "umount2", "pivot_root", "chroot", "unshare", "setns", "init_module",
    "finit_module", "delete_module", "kexec_load", "kexec_file_load", "reboot", "swapon", "swapoff",
    "acct", "quotactl", "quotactl_fd", "open_by_handle_at", "name_to_handle_at", "iopl", "ioperm",
    "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "sethostname", "setdomainname",
    "io_uring_setup", "io_uring_enter", "io_uring_register", "setsid", "setpgid", "mknod",
    "mknodat", "open_tree", "move_mount", "fsopen", "fsconfig", "fsmount", "fspick",
    "mount_setattr", "lookup_dcookie", "vhangup", "syslog", "uselib", "fanotify_init",
    "move_pages", "migrate_pages", "memfd_secret",
    # SysV IPC and POSIX message queues: objects that outlive the process (the IPC namespace
    # already confines them; this is the second wall, for a host without IPC namespaces).
    "shmget", "shmat", "shmctl", "shmdt", "semget", "semop", "semctl", "semtimedop", "msgget",
    "msgsnd", "msgrcv", "msgctl", "mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive",
    "mq_notify", "mq_getsetattr",
]  # fmt: skip

AUDIT_ARCH_X86_64 = 0xC000003E
_RET_ALLOW = 0x7FFF0000
_RET_KILL_PROCESS = 0x80000000
_RET_ERRNO = 0x00050000
_LD_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JGE = 0x35
_JSET = 0x45
_RET = 0x06  # BPF_RET | BPF_K
_NR, _ARCH, _ARG0, _ARG1 = 0, 4, 16, 24  # offsets in struct seccomp_data (low 32 bits of args)


def _op(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("<HBBI", code, jt, jf, k & 0xFFFFFFFF)


def _errno(e: int) -> int:
    return _RET_ERRNO | (e & 0xFFFF)


def seccomp_filter(own_pid: int) -> bytes:
    """The BPF program: deny-list plus argument checks; `own_pid` is the only signal target."""
    eperm = _errno(errno.EPERM)
    prog = [
        _op(_LD_ABS, _ARCH),
        _op(_JEQ, AUDIT_ARCH_X86_64, 1, 0),
        _op(_RET, _RET_KILL_PROCESS),
        _op(_LD_ABS, _NR),
        _op(_JGE, 0x40000000, 0, 1),  # x32 ABI
        _op(_RET, _RET_KILL_PROCESS),
    ]
    for name in DENIED:
        prog += [_op(_JEQ, SYSCALLS[name], 0, 1), _op(_RET, eperm)]
    prog += [_op(_JEQ, 435, 0, 1), _op(_RET, _errno(errno.ENOSYS))]  # clone3

    def arg_block(nr: int, offset: int, body: list[bytes]) -> list[bytes]:
        # if nr matches: load the argument and run `body` (which always returns)
        return [_op(_JEQ, nr, 0, len(body) + 1), _op(_LD_ABS, offset), *body]

    allow, deny = _op(_RET, _RET_ALLOW), _op(_RET, eperm)
    # clone: threads only
    prog += arg_block(SYSCALLS["clone"], _ARG0, [_op(_JSET, CLONE_THREAD, 0, 1), allow, deny])
    # socket: none at all (its one socket exists already). Not even AF_UNIX: a pathname socket
    # (a database's, say) is reachable whatever the network namespace, and Landlock (ABI < 9)
    # does not cover connect(). socketpair() stays: it can only talk to itself.
    prog += [_op(_JEQ, SYSCALLS["socket"], 0, 1), _op(_RET, _errno(errno.EACCES))]
    # prctl: may not clear its parent-death signal, become dumpable or name a ptracer
    prog += arg_block(
        SYSCALLS["prctl"],
        _ARG0,
        [
            _op(_JEQ, PR_SET_PDEATHSIG, 3, 0),
            _op(_JEQ, PR_SET_DUMPABLE, 2, 0),
            _op(_JEQ, PR_SET_PTRACER, 1, 0),
            allow,
            deny,
        ],
    )
    # signals, rlimits, priorities, pidfds: itself only (0 = itself for prlimit/sched/priority)
    for name in ("kill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo", "pidfd_open"):
        prog += arg_block(SYSCALLS[name], _ARG0, [_op(_JEQ, own_pid, 0, 1), allow, deny])
    for name in ("prlimit64", "sched_setaffinity", "sched_setscheduler", "sched_setparam", "sched_setattr"):
        prog += arg_block(SYSCALLS[name], _ARG0, [_op(_JEQ, 0, 1, 0), _op(_JEQ, own_pid, 0, 1), allow, deny])
    for name in ("setpriority", "ioprio_set"):
        prog += arg_block(SYSCALLS[name], _ARG1, [_op(_JEQ, 0, 1, 0), _op(_JEQ, own_pid, 0, 1), allow, deny])
    prog.append(allow)
    return b"".join(prog)


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def seccomp_load(program: bytes) -> None:
    buf = ctypes.create_string_buffer(program, len(program))
    fprog = _SockFprog(len(program) // 8, ctypes.cast(buf, ctypes.c_void_p))
    ok = _libc.prctl(
        ctypes.c_int(PR_SET_SECCOMP), ctypes.c_ulong(SECCOMP_MODE_FILTER), ctypes.byref(fprog), 0, 0
    )
    if ok != 0:
        raise _fail("seccomp")


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
    layers: dict[str, LayerStatus] = field(default_factory=dict)

    def on(self, layer: str) -> bool:
        status = self.layers.get(layer)
        return status is not None and status.active

    def describe(self) -> dict[str, Any]:
        return {name: self.layers[name].to_json() for name in LAYERS if name in self.layers}

"""The seccomp layer: a BPF filter over the child's system calls (x86_64).

No new processes (fork, vfork, clone without CLONE_THREAD, clone3), no exec, no new sockets
(socketpair only), no ptrace or process_vm_*, no namespaces or mounts, no signals, rlimits or
priorities aimed at other processes, no io_uring, bpf, keyrings or modules, no SysV IPC or
POSIX message queues, and no way to clear its parent-death signal. See
graders/sandbox/isolation.py for the other layers.
"""

from __future__ import annotations

import ctypes
import errno
import struct

from graders.sandbox.syscalls import (
    CLONE_THREAD,
    PR_SET_DUMPABLE,
    PR_SET_PDEATHSIG,
    PR_SET_PTRACER,
    PR_SET_SECCOMP,
    SECCOMP_MODE_FILTER,
    fail,
)
from graders.sandbox.syscalls import libc as _libc

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
    "inotify_init": 253, "inotify_add_watch": 254, "inotify_rm_watch": 255, "inotify_init1": 294,
    "fanotify_mark": 301,
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
    # Watching files: inotify reports activity on any file the process may look up (the
    # database being written, another submission's folder), whatever Landlock lets it open.
    "inotify_init", "inotify_init1", "inotify_add_watch", "inotify_rm_watch", "fanotify_mark",
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
        raise fail("seccomp")

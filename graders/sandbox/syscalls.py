"""libc through ctypes, for the isolation layers: one handle, errors as OSError.

The layers (graders/sandbox/isolation.py, landlock.py, seccomp.py) call the kernel directly
with syscall() where Python has no wrapper; no dependency beyond the C library.
"""

from __future__ import annotations

import ctypes
import os
import platform

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long

X86_64 = platform.machine() == "x86_64"  # the Landlock and seccomp syscall numbers are x86_64's

# The kernel's constants the layers pass (linux/sched.h, mount.h, prctl.h, seccomp.h).
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


def fail(what: str) -> OSError:
    """The OSError for the libc call that just failed, from its errno."""
    err = ctypes.get_errno()
    return OSError(err, f"{what}: {os.strerror(err)}")

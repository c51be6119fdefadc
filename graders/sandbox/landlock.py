"""The Landlock layer: a child reads only the Python installation and writes only its temp folder.

`landlock_rules(protected)` lists what a child may read (stdlib, site-packages without our
own packages, shared libraries, a few devices); `landlock_restrict` enforces that ruleset on
the calling process, with TCP bind/connect refused (ABI 4) and signals and abstract unix
sockets scoped to its own domain (ABI 6). See graders/sandbox/isolation.py for the other layers.
"""

from __future__ import annotations

import ctypes
import os
import struct
import sys
import sysconfig
from dataclasses import dataclass

from graders.sandbox.syscalls import X86_64, fail
from graders.sandbox.syscalls import libc as _libc

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
        raise fail("landlock_create_ruleset")
    try:
        pairs = [(r.fd, r.access) for r in rules if r.fd >= 0] + extra
        for fd, access in pairs:
            rule = ctypes.create_string_buffer(struct.pack("<Qi", access & handled, fd), 12)
            if _libc.syscall(_SYS_LL_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(1), rule, 0) != 0:
                raise fail("landlock_add_rule")
        if _libc.syscall(_SYS_LL_RESTRICT, ctypes.c_int(ruleset), ctypes.c_uint32(0)) != 0:
            raise fail("landlock_restrict_self")
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

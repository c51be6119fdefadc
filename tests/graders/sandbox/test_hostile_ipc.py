"""Hostile submissions that try to leave something behind through inter-process communication.

SysV shared memory, message queues and semaphore sets, POSIX message queues and POSIX
shared memory (files in /dev/shm) outlive the process that made them unless something
removes them. A submission must not be able to leave any of them behind after its verdict
(memory stays taken, and a later submission under another uid could read what it wrote),
nor see one that the host or an earlier submission made.

Each layer is tested alone as well: with seccomp off the IPC namespace must still hold,
and with the IPC namespace off seccomp must still refuse the calls.
"""

from __future__ import annotations

import ctypes
import os
import secrets
from collections.abc import Iterator

import pytest
from fake_challenge import FAKE_SLUG

from graders.runner import grade
from graders.sandbox.client import ForkServerClient
from graders.verdict import Result

IPC_CREAT, IPC_RMID = 0o1000, 0
_libc = ctypes.CDLL(None, use_errno=True)
_libc.shmat.restype = ctypes.c_void_p
_libc.mq_open.restype = ctypes.c_int


def _names() -> tuple[int, str]:
    """A fresh SysV key and POSIX name, so that runs on one machine never meet."""
    return secrets.randbelow(2**30) + 1, f"kvprep-ipc-{secrets.token_hex(6)}"


def _plant(key: int, name: str) -> str:
    """A submission that creates one of everything with `key` / `name`, writes into it, and keeps it.

    It passes (returns a + b) and prints which creations the sandbox let through.
    """
    return f"""
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
KEY, NAME = {key}, {name!r}
made = []
def plant():
    shm = libc.shmget(KEY, 64 * 2**20, 0o1000 | 0o666)
    if shm >= 0:
        addr = libc.shmat(shm, None, 0)
        if addr not in (None, ctypes.c_void_p(-1).value):
            ctypes.memmove(addr, b'left behind', 11)
        made.append('shm')
    msq = libc.msgget(KEY, 0o1000 | 0o666)
    if msq >= 0:
        message = ctypes.create_string_buffer(ctypes.sizeof(ctypes.c_long) + 11)
        ctypes.c_long.from_buffer(message).value = 1
        message[ctypes.sizeof(ctypes.c_long):] = b'left behind'
        libc.msgsnd(msq, message, 11, 0o4000)
        made.append('msg')
    if libc.semget(KEY, 4, 0o1000 | 0o666) >= 0:
        made.append('sem')
    if libc.mq_open(('/' + NAME).encode(), os.O_CREAT | os.O_RDWR, 0o666, None) >= 0:
        made.append('mqueue')
    try:
        fd = os.open('/dev/shm/' + NAME, os.O_CREAT | os.O_RDWR, 0o666)
        os.write(fd, b'left behind')
        made.append('dev-shm')
    except OSError:
        pass
    print('made', made)
def add(a, b):
    if not made:
        plant()
    return a + b
"""


def _peek(key: int, name: str) -> str:
    """A submission that fails (a - b) if it can find anything with `key` / `name`, and says what."""
    return f"""
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
KEY, NAME = {key}, {name!r}
def found():
    seen = []
    if libc.shmget(KEY, 0, 0) >= 0:
        seen.append('shm')
    if libc.msgget(KEY, 0) >= 0:
        seen.append('msg')
    if libc.semget(KEY, 0, 0) >= 0:
        seen.append('sem')
    if libc.mq_open(('/' + NAME).encode(), os.O_RDONLY) >= 0:
        seen.append('mqueue')
    try:
        with open('/dev/shm/' + NAME, 'rb') as f:
            f.read()
        seen.append('dev-shm')
    except OSError:
        pass
    print('seen', seen)
    return seen
def add(a, b):
    return a - b if found() else a + b
"""


def _sysv_keys(kind: str) -> set[int]:
    """The keys of every SysV object of `kind` (shm, msg, sem) in the host's IPC namespace."""
    with open(f"/proc/sysvipc/{kind}") as f:
        next(f)
        return {int(line.split()[0]) for line in f if line.strip()}


def _mqueue_exists(name: str) -> bool:
    fd = _libc.mq_open(f"/{name}".encode(), os.O_RDONLY)
    if fd >= 0:
        _libc.mq_close(fd)
        _libc.mq_unlink(f"/{name}".encode())
        return True
    return False


def _left_behind(key: int, name: str) -> list[str]:
    left = [kind for kind in ("shm", "msg", "sem") if key in _sysv_keys(kind)]
    if _mqueue_exists(name):
        left.append("mqueue")
    if os.path.exists(f"/dev/shm/{name}"):
        left.append("dev-shm")
    return left


@pytest.fixture
def cleanup() -> Iterator[list[tuple[int, str]]]:
    """Names a test used; whatever a failing run left behind under them is removed afterwards."""
    used: list[tuple[int, str]] = []
    yield used
    for key, name in used:
        for get, ctl in ((_libc.shmget, _libc.shmctl), (_libc.msgget, _libc.msgctl)):
            ident = get(key, 0, 0) if get is _libc.shmget else get(key, 0)
            if ident >= 0:
                ctl(ident, IPC_RMID, None)
        sem = _libc.semget(key, 0, 0)
        if sem >= 0:
            _libc.semctl(sem, 0, IPC_RMID)
        _libc.mq_unlink(f"/{name}".encode())
        try:
            os.unlink(f"/dev/shm/{name}")
        except OSError:
            pass


def _grade(code: str, client: ForkServerClient | None) -> Result:
    return grade(FAKE_SLUG, code, client=client)


def _check_nothing_survives(client: ForkServerClient | None, cleanup: list[tuple[int, str]]) -> str:
    key, name = _names()
    cleanup.append((key, name))
    planted = _grade(_plant(key, name), client)
    assert planted.verdict.value == "passed", planted.to_json()
    assert _left_behind(key, name) == [], planted.output
    peeked = _grade(_peek(key, name), client)
    assert peeked.verdict.value == "passed", peeked.output
    return planted.output


def test_nothing_made_through_ipc_survives_the_verdict(cleanup: list[tuple[int, str]]) -> None:
    output = _check_nothing_survives(None, cleanup)
    assert "made []" in output, output  # seccomp refuses every call outright


@pytest.mark.parametrize("off", ["seccomp", "ipcns"])
def test_each_layer_alone_keeps_ipc_from_surviving(off: str, cleanup: list[tuple[int, str]]) -> None:
    client = ForkServerClient(disable=[off])
    try:
        output = _check_nothing_survives(client, cleanup)
        layers = client.isolation
    finally:
        client.shutdown()
    assert layers[off]["active"] is False
    if off == "seccomp":
        # Inside its own IPC namespace the SysV calls work (Landlock still refuses to open a
        # POSIX queue), and everything goes with the namespace.
        assert "made ['shm', 'msg', 'sem'" in output, output
    else:
        assert "made []" in output, output


def test_ipc_objects_of_the_host_are_out_of_reach(cleanup: list[tuple[int, str]]) -> None:
    key, name = _names()
    cleanup.append((key, name))
    assert _libc.shmget(key, 4096, IPC_CREAT | 0o666) >= 0
    assert _libc.msgget(key, IPC_CREAT | 0o666) >= 0
    assert _libc.semget(key, 1, IPC_CREAT | 0o666) >= 0
    mq = _libc.mq_open(f"/{name}".encode(), os.O_CREAT | os.O_RDWR, 0o666, None)
    assert mq >= 0
    _libc.mq_close(mq)
    path = f"/dev/shm/{name}"
    with open(path, "wb") as f:
        f.write(b"the host's")
    os.chmod(path, 0o666)
    for client in (None, ForkServerClient(disable=["seccomp"])):
        try:
            result = _grade(_peek(key, name), client)
        finally:
            if client is not None:
                client.shutdown()
        assert result.verdict.value == "passed", result.output

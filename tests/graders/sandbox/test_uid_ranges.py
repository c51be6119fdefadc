"""Every fork server claims its own block of sandbox uids: servers on one machine never share one."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

from app.config import Settings
from graders.limits import Limits
from graders.sandbox import uid_ranges
from graders.sandbox.client import PROJECT_ROOT, ForkServerClient, SandboxError, shared_client

UID_CODE = "import os\ndef uid():\n    return os.getuid()\n"
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="children change uid only when the sandbox is root")


def _far_base() -> int:
    """An aligned base no other server on this machine is configured with."""
    return (4096 + secrets.randbelow(2**14)) * uid_ranges.UIDS_PER_SERVER


@as_root
def test_two_fork_servers_never_share_uids() -> None:
    """Like two `kvprep serve` on one machine, or the processes of `--workers 2`: no configuration."""
    first, second = ForkServerClient(), ForkServerClient()
    try:
        for client in (shared_client(), first, second):
            client.ensure_started()  # before any session's wall clock starts
        with shared_client().open(Limits()) as a, first.open(Limits()) as b, second.open(Limits()) as c:
            uids = []
            for session in (a, b, c):
                session.load(UID_CODE)
                uids.append(session.call("uid"))
        blocks = [shared_client().uids, first.uids, second.uids]
    finally:
        first.shutdown()
        second.shutdown()
    assert len(set(uids)) == 3, uids
    assert all(block is not None for block in blocks)
    for uid, (low, high) in zip(uids, blocks, strict=True):  # type: ignore[misc]
        assert low <= uid <= high
    ranges = sorted(blocks)  # type: ignore[type-var]
    assert all(prev[1] < nxt[0] for prev, nxt in zip(ranges, ranges[1:], strict=False)), ranges


@as_root
def test_the_uid_base_is_a_setting() -> None:
    base = _far_base()
    client = ForkServerClient(uid_base=base, uid_count=2 * uid_ranges.UIDS_PER_SERVER)
    try:
        with client.open(Limits()) as session:
            session.load(UID_CODE)
            uid = session.call("uid")
        assert client.uids == (base, base + uid_ranges.UIDS_PER_SERVER - 1)
        assert str(base) in client.isolation["uid"]["detail"]
    finally:
        client.shutdown()
    assert base <= uid < base + uid_ranges.UIDS_PER_SERVER


def test_the_setting_and_the_environment_agree(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Settings().sandbox_uid_base == ForkServerClient().uid_base == 61440
    monkeypatch.setenv("KVPREP_SANDBOX_UID_BASE", "70016")
    monkeypatch.setenv("KVPREP_SANDBOX_UID_COUNT", "256")
    settings = Settings()
    client = ForkServerClient()  # `kvprep grade` and `kvprep worker` read the same variables
    assert (settings.sandbox_uid_base, settings.sandbox_uid_count) == (70016, 256)
    assert (client.uid_base, client.uid_count) == (70016, 256)


def test_a_held_block_is_skipped_and_free_again_when_its_holder_dies(tmp_path: Path) -> None:
    locks = tmp_path / "locks"
    base, size = _far_base(), uid_ranges.UIDS_PER_SERVER
    mine = uid_ranges.claim(base, 3 * size, str(locks))
    script = (
        "import sys, time\n"
        "from graders.sandbox import uid_ranges\n"
        f"held = uid_ranges.claim({base}, {3 * size}, {str(locks)!r})\n"
        "print(held.first, flush=True)\n"
        "time.sleep(60)\n"
    )
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": PROJECT_ROOT}
    other = subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert other.stdout is not None
        theirs = int(other.stdout.readline())
        third = uid_ranges.claim(base, 3 * size, str(locks))
        assert (mine.first, theirs, third.first) == (base, base + size, base + 2 * size)
        with pytest.raises(uid_ranges.NoFreeUidRange, match="held by other running fork servers"):
            uid_ranges.claim(base, 3 * size, str(locks))
    finally:
        other.kill()
        other.wait()
        if other.stdout is not None:
            other.stdout.close()
    again = uid_ranges.claim(base, 3 * size, str(locks))  # the kernel dropped the dead holder's lock
    assert again.first == base + size
    for held in (mine, third, again):
        held.release()


def test_blocks_are_aligned_so_overlapping_bases_share_lock_files() -> None:
    size = uid_ranges.UIDS_PER_SERVER
    assert uid_ranges.blocks(61440, 1024) == [61440 + i * size for i in range(16)]
    assert uid_ranges.blocks(61000, 1024)[0] == 61056  # rounded up, never below the base
    assert set(uid_ranges.blocks(61000, 1024)) < set(uid_ranges.blocks(60000, 4096))
    assert uid_ranges.blocks(61441, 64) == []


def test_a_lock_folder_others_may_write_is_refused(tmp_path: Path) -> None:
    open_folder = tmp_path / "open"
    open_folder.mkdir()
    open_folder.chmod(0o777)
    with pytest.raises(uid_ranges.NoFreeUidRange, match="only it may write"):
        uid_ranges.claim(_far_base(), 128, str(open_folder))


@as_root
def test_a_server_with_no_free_block_says_so() -> None:
    base = _far_base()
    held = uid_ranges.claim(base, uid_ranges.UIDS_PER_SERVER)  # the real lock folder, far away
    client = ForkServerClient(uid_base=base, uid_count=uid_ranges.UIDS_PER_SERVER)
    try:
        with pytest.raises(SandboxError, match="held by other running fork servers"):
            client.ensure_started()
    finally:
        client.shutdown()
        held.release()

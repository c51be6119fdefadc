"""The rootfs layer: a child's file system holds only what Landlock lets it read, and its temp folder.

Landlock decides who may open, read, write or list a path, but not who may look one up:
stat(), access(), readlink() and their *at forms reach any path on the host, so a submission
could learn the sizes and times of the database, the reference code or another tenant's files
(issue 21). Seccomp cannot tell paths apart (it sees the pointer, not the string). So each child,
in its own mount namespace, pivots into a fresh tmpfs holding bind mounts of exactly the paths
Landlock grants (graders/sandbox/landlock.landlock_rules), the symlinks on the way to them
(/lib -> usr/lib and the like, so that the dynamic loader's cached paths still resolve), and its
own temp folder; the host's root is detached. Any other path answers ENOENT to every call.

The grant's inodes are the same through a bind mount, so the Landlock rules the fork server
opened on the host paths hold in the new root too. What stays visible: the Python installation
and shared libraries (public files), a few devices, the temp folder. Not there: /proc, /sys,
/etc (but ld.so.cache and the zone file), /tmp, /home, the project, the database.
"""

from __future__ import annotations

import ctypes
import os

from graders.sandbox.syscalls import MS_NODEV, MS_NOSUID, MS_RDONLY, MS_REC, fail
from graders.sandbox.syscalls import libc as _libc

MS_REMOUNT = 0x20
MS_BIND = 0x1000
MNT_DETACH = 2
_SYS_PIVOT_ROOT = 155  # x86_64
_OLD_ROOT = ".host"


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    def enc(s: str | None) -> bytes | None:
        return None if s is None else s.encode()

    if _libc.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)) != 0:
        raise fail(f"mount {target}")


def aliases() -> list[str]:
    """Symlinked names a child may use to reach its grant: the top-level symlinks of / (merged
    /usr: /lib, /lib64, /bin) and those on the way to sys.path and the library folders."""
    import sys
    import sysconfig

    names = {os.path.join("/", n) for n in os.listdir("/") if os.path.islink(os.path.join("/", n))}
    names |= {p for p in sys.path if p and os.path.isabs(p)}
    names |= {sys.prefix, sys.base_prefix, sys.exec_prefix}
    names |= {sysconfig.get_config_var("LIBDIR") or "", "/lib/x86_64-linux-gnu", "/lib64"}
    return sorted(n for n in names if n and os.path.lexists(n))


def _mirror(root: str, path: str, depth: int = 0) -> None:
    """Make `path`'s chain of folders and symlinks exist under `root` (folders empty, symlinks
    with the host's text), as far as it exists on the host."""
    current = "/"
    for part in [p for p in path.split("/") if p]:
        host = os.path.join(current, part)
        mine = root + host
        if os.path.islink(host):
            if not os.path.lexists(mine):
                os.symlink(os.readlink(host), mine)
            if depth < 8:  # the link's target exists in the view too
                _mirror(root, os.path.realpath(host), depth + 1)
            current = os.path.realpath(host)
        elif os.path.isdir(host):
            if not os.path.lexists(mine):
                os.mkdir(mine, 0o755)
            current = host
        else:
            return


def build_view(root: str, grant: list[str], names: list[str], workdir: str) -> None:
    """Fill the tmpfs mounted at `root`: each granted path bound at its own name, the alias
    symlinks, and the temp folder `workdir`.

    A folder granted only for listing (site-packages, whose entries are granted one by one) is
    bound whole too: an empty stand-in would have another mtime, and importlib's FileFinder,
    seeing it change, would list it again (which Landlock allows only on the real folder) and
    lose every module not imported yet. Its other entries stay unreadable (Landlock)."""
    for name in names:
        _mirror(root, name)
    bound: list[str] = []
    for path in sorted(grant):
        if any(path.startswith(b.rstrip("/") + "/") for b in bound):
            continue  # already visible through a granted folder above it
        _mirror(root, os.path.dirname(path))
        target = root + path
        if os.path.isdir(path):
            os.makedirs(target, mode=0o755, exist_ok=True)
            _mount(path, target, None, MS_BIND | MS_REC)
        else:
            if not os.path.lexists(target):
                os.close(os.open(target, os.O_WRONLY | os.O_CREAT, 0o444))
            _mount(path, target, None, MS_BIND)
        bound.append(path)
    _mirror(root, os.path.dirname(workdir))
    os.makedirs(root + workdir, mode=0o700, exist_ok=True)
    _mount(workdir, root + workdir, None, MS_BIND)


def enter_view(stage: str, grant: list[str], names: list[str], workdir: str) -> None:
    """Pivot this process (alone in its mount namespace) into a tmpfs at `stage` holding only
    the grant, then drop the host's root. `stage` is an empty folder nobody else uses here."""
    flags = MS_NOSUID | MS_NODEV
    _mount("tmpfs", stage, "tmpfs", flags, "size=1m,nr_inodes=16384,mode=0755")
    build_view(stage, grant, names, workdir)
    os.mkdir(os.path.join(stage, _OLD_ROOT), 0o700)
    if _libc.syscall(_SYS_PIVOT_ROOT, stage.encode(), os.path.join(stage, _OLD_ROOT).encode()) != 0:
        raise fail("pivot_root")
    os.chdir("/")
    if _libc.umount2(f"/{_OLD_ROOT}".encode(), MNT_DETACH) != 0:
        raise fail("umount2 of the host's root")
    os.rmdir(f"/{_OLD_ROOT}")
    # Read-only skeleton: what the child may write is its temp folder, a mount of its own.
    _mount(None, "/", None, MS_REMOUNT | MS_BIND | MS_RDONLY | flags)

"""The fork server: a warm Python with torch and numpy that forks one isolated child per submission.

Started by the grader (graders/sandbox/client.py) as

    python -m graders.sandbox.forkserver --socket DIR/ctl.sock --work WORKDIR [--hide DIR]...
                                         [--protect DIR]... [--uid-base N] [--uid-count N]
                                         [--disable LAYER]... [--spares N]

with a scrubbed environment (OMP_NUM_THREADS=1) in a private 0700 folder. It imports only
torch, numpy, the stdlib and graders.sandbox's own modules (never graders.checks,
graders.reference or app: a child inherits this process's memory, so nothing in it may
help forge a verdict), sets torch to one thread before any torch op, warms torch up, then:

1. probes which isolation layers work here (a throw-away child tries each one) and prints
   one JSON line `{"ready": true, "isolation": {...}}` on stdout;
2. serves grader connections on a unix SOCK_SEQPACKET socket. Per connection, one child:
   `{"op": "spawn", "limits": {...}}` -> the server creates a socketpair and a memfd for
   the child's output, forks, and answers `{"ok": true, "pid": ...}` with the grader's end
   of the socketpair and the output memfd attached (SCM_RIGHTS). The grader then talks to
   the child directly (graders/sandbox/runtime.py). `{"op": "kill"}` or closing the
   connection kills the child (with seccomp on, `{"event": "killed"}` says the SIGKILL is
   sent); when it has exited the server sends `{"event": "exit", "code", "signal", "cpu",
   "killed"}` and frees its worker slot;
3. keeps `--spares N` children forked ahead (one per worker slot): each enters every layer
   (its own uid, namespaces, rlimits, Landlock, seccomp, a fresh temp folder), sends
   `{"ready": true}` on its socket, which the server still holds, then waits for its first
   request. A spawn takes a ready spare forked with the same limits (its server-side clock
   starts then; RLIMIT_CPU only counts CPU used) and a new spare is forked once no handed-out
   child is running (right away if no spare is left); a spare is handed out once, never
   reused. A dead, failed or stale-limits spare is dropped and the child is forked on demand;
4. exits, killing every child, when its stdin reaches EOF (the grader went away) or on SIGTERM.

As an ordinary user it first moves into a user namespace (and a PID namespace of its own,
whose PID 1 it is), so that it may create namespaces for its children; as root it does
not need to. See graders/sandbox/__init__.py for what all this protects against.

This module is the start-up (arguments, the user namespace, imports and warm-up, the
interpreter's scrubbing, the layer probe); the loop of step 2-4 is graders/sandbox/forkserver/server.py
and what a child does once forked is graders/sandbox/child_side.py.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import signal
import sys
import time
import traceback

from graders.sandbox import isolation as iso
from graders.sandbox import rootfs, uid_ranges
from graders.sandbox.child_side import warm_up_torch
from graders.sandbox.forkserver.server import DEFAULT_LIMITS, ForkServer
from graders.sandbox.isolation import LayerStatus, Plan

CHILD_ENV_KEEP = ("LANG", "LC_ALL")
PREIMPORT = (
    "math cmath random typing dataclasses functools itertools collections collections.abc heapq "
    "bisect copy re json statistics fractions decimal string operator enum abc contextlib time "
    "numbers array struct warnings textwrap inspect traceback linecache types tempfile"
).split()


def _scrub_interpreter(protected: list[str]) -> None:
    """Environment and import path as a submission should see them (done once, in the server).

    Children inherit the result for free; per child only HOME, TMPDIR and tempfile's folder
    change (graders/sandbox/child_side.py). The project's folders leave sys.path and the import caches, and
    the editable-install finder that maps `graders`/`app` to them is removed.
    """
    keep = {k: os.environ[k] for k in CHILD_ENV_KEEP if k in os.environ}
    os.environ.clear()
    os.environ.update(keep)
    os.environ.update(
        PATH="/usr/bin:/bin", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1"
    )
    roots = [os.path.realpath(p) for p in protected]

    def allowed(entry: str) -> bool:
        if not entry or entry.startswith("__editable__") or not os.path.isabs(entry):
            return False
        real = os.path.realpath(entry)
        if os.path.basename(real) in ("site-packages", "dist-packages"):
            return True
        return not any(real == r or real.startswith(r.rstrip("/") + "/") for r in roots)

    sys.path[:] = [p for p in sys.path if allowed(p) and os.path.realpath(p) != os.getcwd()]
    for key in [k for k in sys.path_importer_cache if not allowed(k)]:
        del sys.path_importer_cache[key]
    sys.meta_path[:] = [f for f in sys.meta_path if "__editable__" not in getattr(f, "__module__", "")]
    sys.path_hooks[:] = [h for h in sys.path_hooks if "__editable__" not in getattr(h, "__module__", "")]
    sys.dont_write_bytecode = True


def probe_layers(server: ForkServer) -> None:
    """Fork one child that tries every layer; keep the ones that worked (in server.plan)."""
    plan = server.plan
    if "pidns" not in plan.layers:
        try:  # the PID namespace is the server's part: unshare before fork, setns back after
            probe_pid = server.fork_in_new_pidns()
            if probe_pid == 0:
                os._exit(0)
            os.waitpid(probe_pid, 0)
            plan.layers["pidns"] = LayerStatus(True, "each child is PID 1 of its own PID namespace")
        except OSError as exc:
            plan.layers["pidns"] = LayerStatus(False, f"cannot create PID namespaces: {exc}")
    limits = dict(DEFAULT_LIMITS, wall_seconds=30)
    child, sock, out_fd = server.fork(limits, probe=True)
    try:
        from graders.sandbox import wire

        report, _ = wire.recv_frame(sock, max_bytes=1 << 20, deadline=time.monotonic() + 60)
    finally:
        sock.close()
        server.reap(child, block=True)
        output = os.pread(out_fd, 4096, 0).decode(errors="replace")
        os.close(out_fd)
    if "setup_error" in report:
        raise RuntimeError(f"the sandbox probe failed: {report['setup_error']}\n{output}")
    failures: dict[str, str] = report["failures"]
    if report["sanity"] != "ok":
        raise RuntimeError(f"a sandboxed child cannot run torch: {report['sanity']}\n{output}")
    details = {
        "netns": "no network: a network namespace with only a down loopback",
        "ipcns": (
            "an IPC namespace of its own: SysV IPC and POSIX message queues made inside vanish "
            "with the child; the host's are out of sight"
        ),
        "mountns": (
            "temp folder is a private tmpfs capped at disk_bytes; the server's folder and /dev/shm are hidden"
        ),
        "rootfs": (
            f"its file system holds only what Landlock grants ({len(plan.view)} paths) and its temp "
            "folder: stat() of any other path finds nothing"
        ),
        "uid": (
            f"each child runs as uid/gid {plan.uid_base}+slot with no supplementary groups "
            f"(uids {plan.uid_base}..{plan.uid_base + plan.uid_span - 1}, this server's own block)"
        ),
        "userns": "children drop every capability they hold in the server's user namespace",
        "rlimits": "CPU, address space, file size, open files" + (", processes" if plan.root else ""),
        "landlock": (
            f"ABI {plan.landlock_abi}: reads only the Python installation ({len(plan.rules)} rules), "
            "writes only its temp folder"
            + (", no TCP" if plan.landlock_abi >= 4 else "")
            + (", signals and abstract sockets scoped" if plan.landlock_abi >= 6 else "")
        ),
        "seccomp": "no new processes, exec, sockets, ptrace, mounts, namespaces or SysV/POSIX-mqueue IPC",
    }
    for layer, detail in details.items():
        if layer in plan.layers and not plan.layers[layer].active:
            continue
        if layer in failures:
            plan.layers[layer] = LayerStatus(False, failures[layer])
        else:
            plan.layers[layer] = LayerStatus(True, detail)
    if not plan.on("mountns"):
        os.chmod(server.work_root, 0o711)


def _enter_user_namespace() -> LayerStatus:
    """Unprivileged: become PID 1 of a new user+PID namespace pair (forks; the parent relays)."""
    uid, gid = os.getuid(), os.getgid()
    try:
        iso.unshare(iso.CLONE_NEWUSER)
    except OSError as exc:
        return LayerStatus(False, f"user namespaces unavailable ({exc}): children share the user's uid")
    iso.write_id_maps(uid, gid)
    iso.unshare(iso.CLONE_NEWPID)
    pid = os.fork()
    if pid > 0:  # the outer process: wait for the real server, pass on a SIGTERM
        signal.signal(signal.SIGTERM, lambda *_: os.kill(pid, signal.SIGKILL))
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        while True:
            try:
                _, status = os.waitpid(pid, 0)
                break
            except InterruptedError:
                continue
        os._exit(os.waitstatus_to_exitcode(status) & 0xFF)
    iso.prctl(iso.PR_SET_PDEATHSIG, signal.SIGKILL)
    return LayerStatus(True, "the server runs in a user namespace; children drop all capabilities")


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m graders.sandbox.forkserver")
    parser.add_argument("--socket", required=True)
    parser.add_argument("--work", required=True, help="folder for the children's temp folders")
    parser.add_argument("--hide", action="append", default=[], help="hidden from children (mountns)")
    parser.add_argument("--protect", action="append", default=[], help="never readable by children")
    parser.add_argument("--uid-base", type=int, default=61440, help="first uid the sandbox may use")
    parser.add_argument("--uid-count", type=int, default=1024, help="uids it may use, from --uid-base")
    parser.add_argument("--uid-lock-dir", default=uid_ranges.LOCK_DIR, help="where blocks are claimed")
    parser.add_argument("--disable", action="append", default=[], choices=iso.LAYERS)
    parser.add_argument("--spares", type=int, default=0, help="children kept forked and isolated ahead")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    root = os.geteuid() == 0
    uids: uid_ranges.UidRange | None = None
    if root:  # first, before the slow imports: with no free block there is nothing to start
        try:
            uids = uid_ranges.claim(args.uid_base, args.uid_count, args.uid_lock_dir)
        except (uid_ranges.NoFreeUidRange, OSError) as exc:
            sys.stdout.write(json.dumps({"ready": False, "error": str(exc)}) + "\n")
            sys.stdout.flush()
            return 1
    layers: dict[str, LayerStatus] = {}
    if root:
        layers["userns"] = LayerStatus(False, "running as root: each child gets its own uid instead")
    elif "userns" in args.disable:
        layers["userns"] = LayerStatus(False, "disabled by configuration")
    else:
        layers["userns"] = _enter_user_namespace()  # before torch: unshare needs one thread
    if not root:
        layers["uid"] = LayerStatus(False, "not root: children keep the user's uid")
    if not layers["userns"].active and not root:
        for layer in ("pidns", "netns", "ipcns", "mountns", "rootfs"):
            layers[layer] = LayerStatus(False, "needs root or a user namespace")
    for layer in args.disable:
        layers[layer] = LayerStatus(False, "disabled by configuration")
    if "rootfs" not in layers and "mountns" in layers:
        layers["rootfs"] = LayerStatus(False, "needs the mount namespace")
    if "rootfs" not in layers and not (args.hide and iso.X86_64):
        layers["rootfs"] = LayerStatus(False, "needs a private folder to mount the new root on (x86_64)")

    os.environ["OMP_NUM_THREADS"] = "1"
    import numpy as np
    import torch

    torch.set_num_threads(1)  # before any torch op: a thread pool must not exist at fork time
    import importlib

    for name in PREIMPORT + ["torch.nn", "torch.nn.functional", "numpy.linalg", "numpy.random"]:
        importlib.import_module(name)
    warm_up_torch(torch, np)
    from graders.sandbox import runtime, wire  # noqa: F401 - loaded once, shared by every child

    abi = iso.landlock_abi()
    # The folder holding the graders package is always protected, whatever the caller says.
    protected = [*args.protect, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))]
    # /dev/shm (POSIX shared memory, named semaphores) is shared by every process of the host:
    # each child sees an empty read-only one instead (Landlock also refuses it).
    hide = [*args.hide, *(["/dev/shm"] if os.path.isdir("/dev/shm") else [])]
    plan = Plan(
        root=root,
        uid_base=uids.first if uids else 0,
        uid_span=uids.size if uids else 0,
        hide=hide,
        protected=protected,
        layers=layers,
    )
    if "rootfs" not in layers:
        # What a child's new root holds: Landlock's grant (the same list, whether or not
        # Landlock itself is on here), with the fork server's own folder as the mount point.
        plan.view = [rule.path for rule in iso.landlock_rules(protected)]
        plan.aliases = rootfs.aliases()
        plan.stage = args.hide[0]
    if abi and "landlock" not in layers:
        plan.landlock_abi = abi
        plan.rules = iso.landlock_rules(protected)
        for rule in plan.rules:
            rule.fd = os.open(rule.path, iso.O_PATH)
    elif "landlock" not in layers:
        layers["landlock"] = LayerStatus(
            False, "Landlock is unavailable: an old kernel, not x86_64, or a container's seccomp profile"
        )
    if not iso.X86_64 and "seccomp" not in layers:
        layers["seccomp"] = LayerStatus(False, "the filter is written for x86_64 only")
    _scrub_interpreter(protected)
    try:
        iso.prctl(iso.PR_SET_CHILD_SUBREAPER, 1)
    except OSError:
        pass
    server = ForkServer(plan, args.socket, args.work, max(0, args.spares))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        probe_layers(server)
        server.listen()
        gc.collect()
        gc.freeze()  # children's collections skip (and so do not copy-on-write) the inherited objects
        ready = {
            "ready": True,
            "pid": os.getpid(),
            "root": root,
            "isolation": plan.describe(),
            "uids": [plan.uid_base, plan.uid_base + plan.uid_span - 1] if uids else None,
        }
        sys.stdout.write(json.dumps(ready) + "\n")
        sys.stdout.flush()
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.close(devnull)
        server.serve()
    except Exception:
        traceback.print_exc()
        return 1
    finally:
        server.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Running untrusted submissions: the session protocol the checks drive, and its backends.

How a submission is run
-----------------------
The grader (graders/runner.py, in the web or worker process) holds the check and the
reference. It asks a fork server (graders/sandbox/forkserver/__main__.py: a warm Python that has
imported torch and numpy and nothing of ours but this package) for a child per submission
(forked and fully isolated ahead of time as a spare, used once, or forked on demand),
then drives that child over a socket with fresh random inputs; every result comes back as
bytes the grader decodes and compares itself (graders/sandbox/wire.py, no pickle). The
child is killed and reaped once the verdict is out.

What it protects against
------------------------
- Forging a verdict. The child never holds the reference, the expected values or the
  checks (the fork server never imports them, so they are not in the memory it forks), and
  nothing it prints, returns, patches (torch.allclose, __eq__, tensor subclasses) or exits
  with is trusted: the comparison happens in a process it never ran in.
- Fooling a probe. A check that decides "reads the past from the cache" never uses a call
  a submission could tell apart from the others: every call's cache is handed over by the
  grader (fresh objects each time) and any of them may carry a changed row, so reading the
  cache only when a call "looks like the probe" fails (the decode-step, gqa-attention and
  numpy-cached-generation batteries); kv-cache-buffer keeps every pair `update` returns and
  reads them all back after later writes, so "returns views" is checked on every call.
- Reading what it should not: Landlock lets it read only the Python installation
  (stdlib, site-packages minus our own packages, shared libraries) and write only its own
  temporary folder, so the project (graders/reference, questions/), the database, other
  submissions' folders and /etc/shadow are out of reach; as root it also runs under a uid
  of its own with no groups, from a block of uids that its fork server alone holds
  (graders/sandbox/uid_ranges.py: one flock'd claim per block), so two servers or the
  processes of `kvprep serve --workers N` on one machine never share a uid or its
  RLIMIT_NPROC count.
- Seeing what it may not read: Landlock does not cover looking a path up, so stat(),
  access(), readlink() and the like would still answer for any host path (the database's
  size and times, the reference code's). Each child's mount namespace instead holds a root
  of its own with only Landlock's grant bound into it, the symlinks on the way to it and
  its temp folder (graders/sandbox/rootfs.py): other paths do not exist for it.
- Leaving something behind, or finding what another left: each child has its own IPC
  namespace, so SysV shared memory, message queues, semaphore sets and POSIX message queues
  it makes vanish with it and the host's (or an earlier submission's) are out of sight;
  seccomp refuses those calls as well (a second wall where IPC namespaces are missing), and
  /dev/shm (POSIX shared memory) is an empty read-only folder in its mount namespace and
  out of Landlock's grant. Its temporary folder is its own tmpfs, gone with its mount
  namespace; the server's own folders go when the app stops (also on SIGTERM).
- Watching the host's files: inotify and fanotify are refused (seccomp), so activity on the
  database, the app's folders or another submission's files is out of its sight.
- Starting processes, running programs, opening sockets (not even unix ones: a database's
  socket file is reachable whatever the network namespace), ptrace and similar (seccomp, a
  network namespace, Landlock's TCP rules); anything it might still have started dies with
  it (it is PID 1 of its own PID namespace).
- Exhausting the machine: wall clock (grader), CPU time, address space, file size, total
  temp-folder size (a tmpfs), open files, processes, printed output and reply size are all
  capped (graders/limits.py). Its output never reaches the grader's stdout.

What it does not protect against
--------------------------------
- Kernel exploits: the layers are all Linux kernel features; a kernel bug reachable through
  the allowed system calls (there are many: it is a full CPython with torch) defeats them.
  Run the app in a VM or container for a second boundary.
- Side channels (timing, cache) and CPU/memory-bandwidth contention with other submissions.
- Reading public files inside the Python installation (that is where torch lives), and
  learning its own inputs: checks must use fresh random inputs, never fixed secrets.
- Degraded environments: each layer is best-effort. `describe_isolation()` (logged when the
  fork server starts) says which are active and why the others are not; without Landlock
  an unprivileged sandbox can read whatever the user can (/proc included), without a mount
  namespace the temp folder has no total size cap, without seccomp it can connect to any
  unix socket file its uid may open, without seccomp and a PID namespace a detached
  process could outlive the submission, and without seccomp and an IPC namespace SysV
  objects it makes outlive it.
- Unprivileged, every child shares the user's uid (in a user namespace), so RLIMIT_NPROC
  is not applied and no uid block is claimed; the namespaces still keep children apart.
- Memory outside its address space: files in its tmpfs (capped by disk_bytes) and up to
  open_files memfds of file_size_bytes each are page cache, not RLIMIT_AS.
"""

from __future__ import annotations

from typing import Any


def describe_isolation() -> dict[str, dict[str, Any]]:
    """{layer: {"active": bool, "detail": why}} for the fork server of this process (starts it)."""
    from graders.sandbox.client import describe_isolation as describe

    return describe()

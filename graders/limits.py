"""Every limit a graded submission runs under, with its default and the reason for it.

The app maps its Settings onto `Limits`; the CLI and the tests use the defaults. How each
limit is enforced is said beside it: "grader" means the trusted process that holds the
reference (graders/runner.py), "rlimit" a kernel resource limit set in the submission's
own process just before its code is loaded (graders/sandbox/isolation.py).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

KIB = 1024
MIB = 1024 * KIB
GIB = 1024 * MIB


@dataclass(frozen=True)
class Limits:
    # Wall clock for the whole run (loading the code and every test), 10 s (CONTRACT.md).
    # Grader: each reply is awaited only until the deadline; then the child is killed -> timeout.
    wall_seconds: float = 10.0
    # CPU seconds of the submission's process, 10 s. rlimit RLIMIT_CPU: SIGXCPU at the limit,
    # SIGKILL one second later -> timeout. Catches busy threads the wall clock would also catch.
    cpu_seconds: int = 10
    # Memory the submission may allocate, 2 GiB (CONTRACT.md). rlimit RLIMIT_AS set to the
    # child's address space at start-up (the fork server's baseline: Python, torch and numpy
    # already map ~0.6 GiB of virtual memory) plus this, so a 3 GiB allocation fails with
    # MemoryError / torch's "can't allocate memory" -> memory_limit, while the baseline
    # does not eat into the budget. RLIMIT_AS rather than RLIMIT_DATA: it also covers
    # file and shared mappings and thread stacks.
    memory_bytes: int = 2 * GIB
    # Largest single file the submission may write, 16 MiB (rlimit RLIMIT_FSIZE; its captured
    # output is such a file too). Writes past it fail with EFBIG.
    file_size_bytes: int = 16 * MIB
    # Everything in its private temporary folder together, 64 MiB: the folder is a tmpfs of
    # this size in the child's own mount namespace (when mount namespaces are available).
    disk_bytes: int = 64 * MIB
    # Open files at once, 64 (rlimit RLIMIT_NOFILE).
    open_files: int = 64
    # Processes and threads of the sandbox uid, 16 (rlimit RLIMIT_NPROC, only when the sandbox
    # runs as root and drops each child to its own uid; new processes are blocked by seccomp).
    processes: int = 16
    # What the submission may print (stdout and stderr together), 1 MiB; the rest is dropped.
    output_bytes: int = 1 * MIB
    # How much of that output a verdict carries (its tail), 4096 characters.
    output_excerpt_chars: int = 4096
    # Largest reply (one frame: header and tensor bytes) the grader will read from a child,
    # 32 MiB: the checks' tensors are a few MiB at most. A bigger one is refused.
    max_reply_bytes: int = 32 * MIB
    # Submissions graded at the same time by one process, 2 (this machine has 2 cores; each
    # child runs single-threaded torch). Each running child has its own uid and temp folder.
    worker_slots: int = 2

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                raise ValueError(f"limit {f.name} must be a positive number, got {value!r}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

"""What a submission's process costs, measured by the kernel from outside that process.

A check that decides a verdict on memory or work must not ask the submission: anything the
child reports (graders/sandbox/footprint.py's counters, its replies) runs in its own
interpreter, where a submission can patch it. These numbers come from /proc/<pid>, read by
the grader, a process the submission never runs in:

- `reset_peak(pid)`: writes "5" to /proc/<pid>/clear_refs, which sets the kernel's high-water
  mark of the process's resident memory (VmHWM) to what it holds now (Linux >= 4.0,
  Documentation/filesystems/proc.rst "clear_refs").
- `resident(pid)`: (VmRSS, VmHWM) in bytes, from /proc/<pid>/status: what it holds now and the
  most it held since the last reset; `resident_file(pid)`: the part of VmRSS that is pages of
  files (RssFile: mostly the code of torch and the interpreter).
- `cpu_seconds(pid)`: user + system CPU time of the process (utime and stime of
  /proc/<pid>/stat), for rules about work done (multiply-adds show as CPU time).
- `PeakWatch`: the peak over a stretch of calls, above a floor the check chose, e.g. the
  process's resident memory before the submission's code was loaded (`SandboxLink.unloaded_rss`):

      with PeakWatch(session.pid, floor=session.unloaded_rss) as watch:
          session.call("tiled_attention", q, k, v, 64)
      watch.above_floor   # bytes: the most it held during the call, beyond what it held unloaded

Measuring above the unloaded floor, not above the start of the stretch, means memory a
submission keeps between calls (a buffer allocated when loaded and reused with `out=`)
counts against it too. What the floor does not count against it is code: a forked child
touches torch's code pages afresh (the fork does not copy page tables of file mappings), and a
child forked on demand, unwarmed, faults in tens of MiB of them over its first calls. So the
floor rises by the file pages (RssFile) the process gained between the unloaded measurement
and the start of the watch (`file_floor`). That credit cannot hide data: pages resident at the
start of the watch stay in the peak, so crediting them only cancels what they add; anonymous
and tmpfs (shmem) pages, where data lives, are never credited, and file pages first touched
during the watch count against it (the slack covers the few a warmed process still adds).

What it cannot see, and what that means for a rule:
- Pages that are not resident: data written to its tmpfs with write() (not mmap'd) or, with
  swap on, pages swapped out. Writing a score matrix to a file block by block is a tiled
  computation as far as memory goes.
- Small differences: RSS moves in pages, and the allocator keeps freed memory for reuse, the
  interpreter faults in code pages of torch it had not run yet. A rule must compare against a
  budget with a few MiB of slack, so it is decided by sizes whose wrong answer is far above
  it (a full score matrix of tens of MiB, every returned copy of a cache).
- Degraded sandboxes: without Landlock the child could write its own /proc/self/clear_refs
  and reset the mark; Landlock (on wherever the kernel has it) keeps /proc out of its reach.
"""

from __future__ import annotations

import os
from types import TracebackType

PAGE = os.sysconf("SC_PAGE_SIZE")
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
SLACK_BYTES = 8 << 20  # allocator retention, first-touched code pages, the request's own payload


class NotMeasurable(OSError):
    """The kernel does not give this measurement for that process (gone, or no /proc)."""


def _status_field(text: str, name: str) -> int:
    for line in text.splitlines():
        if line.startswith(name + ":"):
            fields = line.split()
            if len(fields) == 3 and fields[2] == "kB" and fields[1].isdigit():
                return int(fields[1]) * 1024
    raise NotMeasurable(f"/proc status has no {name}")


def _status(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/status") as f:
            return f.read()
    except OSError as exc:
        raise NotMeasurable(f"cannot read /proc/{pid}/status: {exc}") from None


def resident(pid: int) -> tuple[int, int]:
    """(bytes resident now, most bytes resident since the last reset_peak) of process `pid`."""
    text = _status(pid)
    return _status_field(text, "VmRSS"), _status_field(text, "VmHWM")


def resident_file(pid: int) -> int:
    """Bytes of process `pid`'s resident memory that are pages of files (RssFile, Linux >= 4.5)."""
    return _status_field(_status(pid), "RssFile")


def reset_peak(pid: int) -> None:
    """Set the process's high-water mark of resident memory to what it holds now."""
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as f:
            f.write("5")
    except OSError as exc:
        raise NotMeasurable(f"cannot reset the peak of process {pid}: {exc}") from None


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds process `pid` has used so far (its threads included)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            text = f.read()
    except OSError as exc:
        raise NotMeasurable(f"cannot read /proc/{pid}/stat: {exc}") from None
    # The command name (field 2) is in parentheses and may hold spaces: split after it.
    fields = text[text.rindex(")") + 2 :].split()
    utime, stime = int(fields[11]), int(fields[12])  # fields 14 and 15 of proc(5)
    return (utime + stime) / CLOCK_TICKS


class PeakWatch:
    """The most resident memory process `pid` held while the `with` block ran, from the kernel."""

    def __init__(self, pid: int, floor: int | None = None, file_floor: int | None = None) -> None:
        """`floor`: bytes resident when the stretch's baseline was taken (None: at the start of the
        block); `file_floor`: the file pages resident then, so code touched since is not counted."""
        self.pid = pid
        self.floor = floor
        self.file_floor = file_floor
        self.code_credit = 0  # bytes of file pages gained between the baseline and the block's start
        self.start = 0
        self.peak = 0

    def __enter__(self) -> PeakWatch:
        reset_peak(self.pid)
        self.start = resident(self.pid)[0]
        if self.floor is None:
            self.floor = self.start
        elif self.file_floor is not None:
            self.code_credit = max(0, resident_file(self.pid) - self.file_floor)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if kind is None:
            self.peak = resident(self.pid)[1]

    @property
    def above_floor(self) -> int:
        """Bytes: the peak during the block beyond the floor (its start, unless one was given)."""
        floor = self.start if self.floor is None else self.floor + self.code_credit
        return max(0, self.peak - floor)

    @property
    def above_start(self) -> int:
        return max(0, self.peak - self.start)

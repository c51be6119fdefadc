"""What a submission may not do to the host: watch its files (inotify, fanotify), or crash the grader
with a forged reply."""

from __future__ import annotations

from fake_challenge import FAKE_SLUG

from graders.runner import grade

WATCHER = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
NR = {"inotify_init": 253, "inotify_init1": 294, "fanotify_init": 300}
seen = {}
for name, nr in NR.items():
    fd = libc.syscall(nr, 0, 0) if name != "inotify_init" else libc.syscall(nr)
    seen[name] = "refused" if fd < 0 else "worked"
    if fd >= 0:
        for path in (b"/tmp", b"/etc", os.getcwd().encode()):
            wd = libc.syscall(254, fd, path, 0xFFF)  # inotify_add_watch(IN_ALL_EVENTS)
            seen[name + " " + path.decode()] = "watching" if wd >= 0 else "refused"
print("SEEN", sorted(seen.items()))

def add(a, b):
    return a + b
"""


def test_inotify_and_fanotify_are_refused() -> None:
    result = grade(FAKE_SLUG, WATCHER)
    assert result.verdict.value == "passed", result.to_json()
    assert (
        "SEEN [('fanotify_init', 'refused'), ('inotify_init', 'refused'), ('inotify_init1', 'refused')]"
        in (result.output)
    ), result.output


FORGED_FRAME = """
import sys
wire = sys.modules["graders.sandbox.wire"]
FORGED = {"$": "tensor", "dtype": "float32", "shape": [2**40, 2**40, 0], "offset": 0, "nbytes": 0}
wire.encode = lambda value, keep=None: (FORGED, [])

def add(a, b):
    return a + b
"""


def test_a_forged_reply_shape_gets_a_verdict_not_a_grader_failure() -> None:
    result = grade(FAKE_SLUG, FORGED_FRAME)
    assert result.verdict.value == "error", result.to_json()
    assert "sent back something unreadable" in str(result.to_json()), result.to_json()

"""graders/sandbox/outside.py: the kernel's count of a child's memory and CPU, read by the grader."""

from __future__ import annotations

from graders.sandbox import outside
from graders.sandbox.client import ForkServerClient, shared_client

CODE = """
import sys
import torch

held = []
sys.modules["graders.sandbox.runtime"].measured_call = lambda fn, a, k: (fn(*a, **k), 0)


def allocate(mib):
    t = torch.ones(mib << 18)  # float32: mib MiB, every page written
    return float(t[-1])


def keep(mib):
    held.append(torch.ones(mib << 18))


def attend(t):
    q = torch.randn(1, 4, t, 64)
    s = torch.einsum("bhqd,bhkd->bhqk", q, q).softmax(-1)
    return float(torch.nn.functional.pad(s, (0, 1)).sum())


def map_code(mib):
    import mmap
    f = open(torch._C.__file__, "rb")
    m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    held.append(m)
    return sum(m[i] for i in range(0, min(len(m), mib << 20), 4096))


def groups(n, mib):
    total = 0.0
    for _ in range(n):  # one group's temporaries at a time, as int4's w4a16_matmul makes them
        total += float(torch.ones(mib << 18)[-1])
    return total


def spin(n):
    x = 0
    for i in range(n):
        x += i
    return x
"""


def test_the_peak_of_one_call_is_seen_after_its_memory_is_freed() -> None:
    with shared_client().open() as session:
        session.load(CODE)
        small, big = session.peak_watch(), session.peak_watch()
        assert small is not None and big is not None
        with small:
            session.call("allocate", 1)
        with big:
            session.call("allocate", 48)
        assert big.above_floor > 46 << 20 > small.above_floor
        data_now = outside.resident(session.pid)[0] - outside.resident_file(session.pid)
        data_unloaded = (session.unloaded_rss or 0) - (session.unloaded_file or 0)
        assert data_now - data_unloaded < 8 << 20  # freed again (code pages faulted in meanwhile aside)


def test_a_kept_heap_still_counts_what_a_call_holds_at_once_and_is_handed_back_after() -> None:
    """call_measured(kept_heap=True) (graders/sandbox/allocator.py): blocks freed during the call
    are reused instead of mapped again, so a loop of 1 MiB temporaries peaks near 1 MiB, a 24 MiB
    tensor still counts whole, and the heap is trimmed when the call returns."""
    with shared_client().open() as session:
        session.load(CODE)
        loop, big = session.peak_watch(), session.peak_watch()
        assert loop is not None and big is not None
        with loop:
            session.call_measured("groups", 64, 1, kept_heap=True)
        with big:
            session.call_measured("allocate", 24, kept_heap=True)
        assert loop.above_start < 8 << 20  # 64 MiB allocated in all, 1 MiB at a time
        assert big.above_start > 22 << 20  # under the kept mmap threshold: from the heap
        data_now = outside.resident(session.pid)[0] - outside.resident_file(session.pid)
        data_unloaded = (session.unloaded_rss or 0) - (session.unloaded_file or 0)
        assert data_now - data_unloaded < 8 << 20  # the 24 MiB went back to the kernel


def test_memory_kept_between_calls_counts_against_a_later_call() -> None:
    with shared_client().open() as session:
        session.load(CODE)
        session.call("keep", 32)
        watch = session.peak_watch()
        assert watch is not None
        with watch:
            session.call("allocate", 1)
        assert watch.above_start < 8 << 20  # the call itself allocated little...
        assert watch.above_floor > 31 << 20  # ...but the process holds what it kept


def test_cpu_seconds_grow_with_the_work_done() -> None:
    with shared_client().open() as session:
        session.load(CODE)
        before = outside.cpu_seconds(session.pid)
        session.call("spin", 10_000_000)  # about 0.2-0.5 s of CPU here; ticks are 10 ms
        assert outside.cpu_seconds(session.pid) - before > 0.05


def test_code_pages_touched_by_earlier_calls_are_not_counted_as_data() -> None:
    """A child forked on demand (no warmed spare) touches torch's code afresh, tens of MiB of it:
    that is credited to the floor, the data it keeps never is."""
    client = ForkServerClient(worker_slots=1, spares=0)
    try:
        with client.open() as session:
            session.load(CODE)
            assert not session.spare
            for t in (8, 64, 256):
                session.call("attend", t)  # faults in code pages: einsum, softmax, pad
            session.call("keep", 24)  # data kept between calls
            watch = session.peak_watch()
            assert watch is not None
            with watch:
                session.call("allocate", 1)
            assert 23 << 20 < watch.above_floor < 32 << 20  # the kept 24 MiB count, the code does not
            # ...which takes the credit: counted as data, the code faulted in would break that bound
            assert watch.above_floor + watch.code_credit >= 32 << 20
    finally:
        client.shutdown()


def test_file_pages_mapped_after_a_peak_do_not_hide_it() -> None:
    """Pages of a file touched during the watch are not credited: a peak of data stays seen."""
    with shared_client().open() as session:
        session.load(CODE)
        watch = session.peak_watch()
        assert watch is not None
        with watch:
            session.call("allocate", 40)
            session.call("map_code", 40)
        assert watch.above_floor > 38 << 20

"""graders/sandbox/outside.py: the kernel's count of a child's memory and CPU, read by the grader."""

from __future__ import annotations

from graders.sandbox import outside
from graders.sandbox.client import shared_client

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
        assert outside.resident(session.pid)[0] - (session.unloaded_rss or 0) < 8 << 20  # freed again


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

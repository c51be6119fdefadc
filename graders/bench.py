"""The sandbox's cost per verdict, and what each battery asks of it.

`python -m graders.bench [--runs 50]` (also `kvprep bench sandbox`) grades a trivial
submission against a trivial check (one `add(a, b)` call on small random tensors) `runs`
times with a warm fork server, and prints the median and p95 of grade()'s wall time, next
to the isolation layers that were on: the sandbox's own cost per verdict (a spare child,
loading, one round trip, the kill).

`python -m graders.bench --round-trips [SLUG ...]` grades each challenge's worked solution
(questions/challenges/SLUG/solution.py; default: all of them) and prints, per verdict, the
round trips to the submission's process, the payload bytes each way and grade()'s median
wall time over `--runs`. Counts do not depend on the machine's load; times do.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import types
from pathlib import Path
from typing import Any

CHALLENGES = Path(__file__).resolve().parent.parent / "questions" / "challenges"
SLUG = "bench-add"
CODE = "def add(a, b):\n    return a + b\n"


def _register_trivial_check() -> None:
    import torch

    import graders.checks
    from graders.checks.report import CheckReport, expect_close, run_test

    def run(session: Any) -> CheckReport:
        report = CheckReport()
        a, b = torch.randn(4, 8), torch.randn(4, 8)

        def body() -> None:
            expect_close(session.call("add", a, b), a + b, "add(a, b)")

        run_test(report, "adds", body)
        return report

    module = types.ModuleType("graders_bench_check")
    module.SLUG, module.ENTRY_POINT, module.run = SLUG, "add", run  # type: ignore[attr-defined]
    graders.checks.CHALLENGE_MODULES[SLUG] = module.__name__
    sys.modules[module.__name__] = module


def measure(runs: int = 50) -> dict[str, Any]:
    """{"median_ms", "p95_ms", "runs", "layers"} for `runs` sequential verdicts (server warmed first)."""
    from graders.runner import grade, warm_up

    _register_trivial_check()
    layers = warm_up()
    for _ in range(3):  # first verdicts pay for lazy imports on the grader's side
        grade(SLUG, CODE)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        result = grade(SLUG, CODE)
        times.append((time.perf_counter() - start) * 1000)
        if not result.passed:
            raise RuntimeError(f"the trivial submission did not pass: {result.to_json()}")
    times.sort()
    return {
        "median_ms": round(statistics.median(times), 1),
        "p95_ms": round(times[min(len(times) - 1, round(0.95 * (len(times) - 1)))], 1),
        "runs": runs,
        "layers": sorted(name for name, status in layers.items() if status["active"]),
    }


def round_trips(slugs: list[str], runs: int = 3) -> list[dict[str, Any]]:
    """Per challenge: its verdict, round trips, payload bytes sent/received, grade()'s median ms."""
    from graders.runner import grade, warm_up
    from graders.sandbox import client

    sessions: list[client.SandboxLink] = []
    real_open = client.ForkServerClient.open

    def open_and_note(self: client.ForkServerClient, *args: Any, **kwargs: Any) -> client.SandboxLink:
        session = real_open(self, *args, **kwargs)
        sessions.append(session)
        return session

    warm_up()
    rows = []
    client.ForkServerClient.open = open_and_note  # type: ignore[method-assign]
    try:
        for slug in slugs:
            code = (CHALLENGES / slug / "solution.py").read_text()
            grade(slug, code)  # the battery's first imports
            times = []
            for _ in range(max(1, runs)):
                sessions.clear()
                start = time.perf_counter()
                result = grade(slug, code)
                times.append((time.perf_counter() - start) * 1000)
            (session,) = sessions
            rows.append(
                {
                    "challenge": slug,
                    "verdict": result.verdict.value,
                    "round_trips": session.round_trips,
                    "bytes_sent": session.bytes_sent,
                    "bytes_received": session.bytes_received,
                    "grade_ms": round(statistics.median(times), 1),
                }
            )
    finally:
        client.ForkServerClient.open = real_open  # type: ignore[method-assign]
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m graders.bench (or kvprep bench sandbox)")
    parser.add_argument("--runs", type=int, default=None, help="verdicts timed (default 50; 3 per challenge)")
    parser.add_argument("--round-trips", nargs="*", metavar="SLUG", help="count each battery's round trips")
    args = parser.parse_args(argv)
    if args.round_trips is not None:
        slugs = args.round_trips or sorted(p.parent.name for p in CHALLENGES.glob("*/solution.py"))
        unknown = [slug for slug in slugs if not (CHALLENGES / slug / "solution.py").is_file()]
        if unknown:
            parser.error(f"no worked solution for {', '.join(unknown)} (see questions/challenges/)")
        heading = ("challenge", "verdict", "round trips", "sent", "received", "grade ms")
        print("{:26} {:8} {:>11} {:>10} {:>10} {:>9}".format(*heading))
        for row in round_trips(slugs, 3 if args.runs is None else args.runs):
            print(
                f"{row['challenge']:26} {row['verdict']:8} {row['round_trips']:>11} {row['bytes_sent']:>10}"
                f" {row['bytes_received']:>10} {row['grade_ms']:>9}"
            )
        return 0
    figures = measure(50 if args.runs is None else args.runs)
    print(
        f"grade() through the sandbox, {figures['runs']} runs: median {figures['median_ms']} ms, "
        f"p95 {figures['p95_ms']} ms; layers on: {', '.join(figures['layers'])}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

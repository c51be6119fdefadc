"""Latency of one verdict through the sandbox: `python -m graders.sandbox.bench [--runs 50]`.

Grades a trivial submission against a trivial check (one `add(a, b)` call on small random
tensors) `runs` times with a warm fork server, and prints the median and p95 of grade()'s
wall time, next to the isolation layers that were on. It measures the sandbox's own cost
per verdict: fork, isolation, loading, one round trip, kill and reap.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import types
from typing import Any

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

    module = types.ModuleType("graders_sandbox_bench_check")
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m graders.sandbox.bench")
    parser.add_argument("--runs", type=int, default=50)
    args = parser.parse_args(argv)
    figures = measure(args.runs)
    print(
        f"grade() through the sandbox, {figures['runs']} runs: median {figures['median_ms']} ms, "
        f"p95 {figures['p95_ms']} ms; layers on: {', '.join(figures['layers'])}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

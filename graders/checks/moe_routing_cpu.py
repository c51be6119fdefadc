"""moe-routing's work measured from outside the submission: the child's CPU time around one call.

The multiply-add counter (graders/sandbox/work_counter.py) runs in the submission's process, so
a submission can switch it off or rewrite its figure; it explains a verdict, it cannot pass one
(issue 21). This test decides "runs only the routed tokens" on what the kernel counts instead:
the user + system CPU time of the child (graders/sandbox/outside.cpu_seconds, read from
/proc/<pid>/stat by the grader) around one moe_layer call, against a budget of BUDGET_FACTOR x the
CPU time the reference takes on the same inputs in the grader's own thread (time.thread_time,
best of three, on one torch thread), plus SLACK_S for the wire (the inputs are decoded in the
child, the output encoded).

The size makes the rule decisive rather than close: with E=64 experts and top_k=1 every expert on
every token is 64 x the routed multiply-adds, and the matrix products dominate the reference's
Python overhead. Measured on the development machine (2 busy cores, graders.runner.grade four times
each): the reference 17-23 ms in the grader; in the child, the shipped solution 70-80 ms (decoding
its 25 MB of weights and first touching them included) and every expert on every token with the
counter forged 0.73-1.01 s (tests/graders/cases/moe-routing/dense_forged_counter.py); the budget
is then 0.2-0.24 s, about 3 x above the one and 3 x below the other. CPU time is what the process
used, not wall time, so a busy machine moves it much less than it moves a stopwatch; the clock
ticks in 10 ms steps (CLK_TCK = 100), well below the budget. Where the child's CPU time cannot be
read (the in-process backend) the test says so and passes on the counter alone.
"""

from __future__ import annotations

import time

import torch

from graders.checks.report import CheckReport, Mismatch, as_tensor
from graders.checks.serving_common import Rng
from graders.reference.moe import moe_layer
from graders.sandbox.protocol import SubmissionLink

T, D, F_, E, TOP_K = 2048, 128, 256, 64, 1
BUDGET_FACTOR = 6.0
SLACK_S = 0.1  # decoding the inputs in the child and first touching their pages
RETRIES = 3  # calls at most, when the first is over budget but within RETRY_WITHIN of it
# A call more than this many budgets over is the work, not the machine: every expert on every token
# measured 2.9-3.4 x the budget (quiet and with 4 busy loops on 2 cores), the shipped solution 0.26 x,
# so the right answer would need 8 x its CPU time to be refused unretried. Retrying the dense case
# cost it the run's 10 s wall clock on a crowded CI machine (timeout instead of its verdict).
RETRY_WITHIN = 2.0
DENSE_CPU = "runs every expert on every token (by the CPU time its process used)"


def _reference_cpu(args: tuple[object, ...]) -> float:
    """The reference's CPU seconds on this thread, best of three, on one torch thread as the child
    runs: with a thread pool the calling thread's time is only its share, plus what it spins
    waiting for the others on a busy machine (10 x too much, once seen). The app's grading
    already runs torch on one thread; `kvprep grade` may not."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        best = float("inf")
        for _ in range(3):
            start = time.thread_time()
            moe_layer(*args)  # type: ignore[arg-type]
            best = min(best, time.thread_time() - start)
        return best
    finally:
        torch.set_num_threads(threads)


def _inputs(rng: Rng) -> tuple[object, ...]:
    """Fresh inputs of one size: x [T, D], router [D, E], gate and up [E, D, F], down [E, F, D]."""
    x = rng.randn(T, D)
    w_router = rng.randn(D, E) * 1.5 / D**0.5
    w_gate, w_up = rng.randn(E, D, F_) / D**0.5, rng.randn(E, D, F_) / D**0.5
    w_down = rng.randn(E, F_, D) / F_**0.5
    return (x, w_router, w_gate, w_up, w_down, TOP_K)


def _timed_call(session: SubmissionLink, args: tuple[object, ...]) -> float | None:
    """One moe_layer call in the child, its output checked: the CPU seconds it used (None where the
    child's CPU time cannot be read)."""
    before = session.cpu_seconds()
    got = session.call("moe_layer", *args)
    after = session.cpu_seconds()
    out = as_tensor(got, "moe_layer's output")
    want = moe_layer(*args)  # type: ignore[arg-type]
    if out.shape != want.shape or not torch.allclose(out, want, rtol=1e-4, atol=1e-5):
        raise Mismatch(f"moe_layer's output differs from the reference at T={T}, E={E}, top_k={TOP_K}")
    return None if before is None or after is None else after - before


def test_cpu_time(report: CheckReport, session: SubmissionLink, rng: Rng) -> str:
    """One moe_layer call at T=2048, E=64, top_k=1, timed by the kernel from outside the child."""
    args = _inputs(rng)
    used = _timed_call(session, args)
    reference = _reference_cpu(args)
    budget = BUDGET_FACTOR * reference + SLACK_S
    if used is None:
        return f"CPU time not measurable here; the reference took {reference * 1000:.0f} ms"
    # Over budget once may be a crowded machine (shared caches and memory bandwidth inflate CPU time
    # too: once seen with 9 busy processes on 2 cores), so the best of up to RETRIES calls decides,
    # as the reference's best of three does. Each retry gets fresh inputs, so an answer remembered
    # from a slow first call cannot pass; dense work is 64 x over on every call.
    for _ in range(RETRIES - 1):
        if used <= budget or used > RETRY_WITHIN * budget:
            break
        again = _timed_call(session, _inputs(rng))
        if again is not None:
            used = min(used, again)
    if used > budget:
        report.diagnose(DENSE_CPU)
        raise Mismatch(
            f"{DENSE_CPU}: your moe_layer used {used:.2f} s of CPU time at T={T}, d={D}, f={F_}, E={E}, "
            f"top_k={TOP_K}, where the reference takes {reference * 1000:.0f} ms (the budget is "
            f"{BUDGET_FACTOR:g} x that + {SLACK_S * 1000:.0f} ms = {budget:.2f} s; every expert on every "
            f"token is {E // TOP_K} x the routed work)"
        )
    return (
        f"Measured from outside its process at T={T}, E={E}, top_k={TOP_K}: your moe_layer used "
        f"{used * 1000:.0f} ms of CPU time (budget {budget * 1000:.0f} ms; the reference "
        f"{reference * 1000:.0f} ms)."
    )

"""continuous-batching: one step of vLLM's V1 scheduler, simplified, replayed as whole traces.

The submission's Scheduler and graders.reference.scheduler.Scheduler get the same scripts of
add_request / schedule calls; after every step the grader compares schedule()'s answer,
finished() and num_free_blocks() (graders/checks/continuous_batching_replay.py). One hand-made
script per rule makes that rule decide the answer (running before waiting, the shared budget,
chunked prefill, the first output token, preemption of the last admitted, no admission after a
preemption, FCFS, max_num_seqs, blocks freed, the ValueError); seeded random scripts with tight
block and token budgets check the rules together. A failing script is shrunk before the verdict
shows it, and the known mistake whose trace the submission's equals is named. The verdict also
reports throughput on a fixed workload beside the reference's.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from functools import partial

from graders.checks.continuous_batching_replay import ENTRY_POINT, Replayer, reference_trace
from graders.checks.continuous_batching_script import (
    Add,
    Dims,
    Op,
    Step,
    random_dims,
    random_script,
    req_name,
)
from graders.checks.continuous_batching_variants import Slip, mistake_sentence
from graders.checks.report import CheckReport, Mismatch, run_test
from graders.checks.serving_common import Rng, figure_test
from graders.checks.traces import figures_if_same
from graders.sandbox.protocol import SubmissionError, SubmissionLink
from graders.wording import plural

SLUG = "continuous-batching"
# The sentences are computed, so the ids are the Slip names (graders/mistakes.py).
NAMED_MISTAKES = {s.name: mistake_sentence(s) for s in Slip}
KNOWN_MISTAKES = tuple(NAMED_MISTAKES.values())

S = Step()
Script = tuple[Dims, Sequence[Op]]

# One hand-made case per rule: (test name, scripts). Each makes its rule decide the answer;
# tests/graders/checks/test_continuous_batching.py proves every known mistake fails one.
RULES: tuple[tuple[str, tuple[Script, ...]], ...] = (
    (
        "running requests are scheduled before waiting ones",
        ((Dims(16, 4, 4, 4), (Add("A", 3, 3), S, Add("B", 5, 2), S, S)),),
    ),
    (
        "max_num_batched_tokens is one budget shared by the step's requests",
        ((Dims(16, 4, 6, 4), (Add("A", 4, 2), Add("B", 4, 2), S, S)),),
    ),
    (
        "a prompt longer than the budget is prefilled in chunks, "
        "holding ceil(n_computed / block_size) blocks",
        ((Dims(16, 4, 4, 4), (Add("A", 10, 2), S, S, S, S)),),
    ),
    (
        "the first output token comes from the step that completes the prompt",
        ((Dims(16, 4, 4, 4), (Add("A", 6, 2), S, S, S)),),
    ),
    (
        "out of blocks, the last admitted is preempted: blocks freed, n_computed = 0, outputs kept, "
        "front of the queue",
        ((Dims(2, 2, 8, 4), (Add("A", 2, 3), Add("B", 2, 3), S, Add("C", 2, 1), S, S, S, S, S, S)),),
    ),
    (
        "a step that preempted admits no waiting request",
        ((Dims(8, 2, 8, 2), (Add("A", 2, 12), Add("C", 15, 1), S, S, S)),),
    ),
    (
        "the first waiting request that does not fit stops admission (first come, first served)",
        ((Dims(4, 2, 8, 4), (Add("A", 1, 6), Add("B", 7, 1), Add("C", 4, 1), S, S)),),
    ),
    (
        "at most max_num_seqs requests run at once",
        ((Dims(16, 4, 8, 2), (Add("A", 2, 3), Add("B", 2, 3), Add("C", 2, 3), S, S, S)),),
    ),
    (
        "a finished request frees its blocks, in finishing order",
        ((Dims(4, 2, 3, 3), (Add("A", 3, 1), S, Add("B", 5, 2), S, S, S, S)),),
    ),
)

# add_request's ValueError: ceil((prompt_len + max_new_tokens - 1) / block_size) > num_blocks.
VALUE_ERROR_SCRIPTS: tuple[Script, ...] = (
    (Dims(3, 4, 8, 2), (Add("A", 10, 3), S, S, Add("B", 10, 4))),  # A needs exactly 3 blocks; B 4
    (Dims(3, 4, 8, 2), (Add("C", 1, 12), S, Add("D", 13, 1))),
)

# The workload the throughput figures are measured on: fixed, so runs compare.
WORKLOAD_DIMS = Dims(12, 4, 8, 4)
N_RANDOM_SCRIPTS = 10


def workload() -> list[Op]:
    """14 requests of short prompts and outputs arriving over the first steps, then steps to drain."""
    py = random.Random(2025)
    ops: list[Op] = []
    for i in range(14):
        ops.append(Add(req_name(i), py.randint(2, 16), py.randint(2, 10)))
        ops += [S] * py.randint(0, 2)
    return ops + [S] * 24


def _test_rule(replayer: Replayer, scripts: Sequence[Script]) -> None:
    for dims, ops in scripts:
        replayer.check(dims, ops)


def _test_value_error(replayer: Replayer, session: SubmissionLink) -> None:
    for dims, ops in VALUE_ERROR_SCRIPTS:
        replayer.check(dims, ops)
    # A refused request is not queued: the scheduler runs on as if it had never been asked.
    dims = VALUE_ERROR_SCRIPTS[0][0]
    sched = session.call(ENTRY_POINT, *dims.args(), keep=True)
    try:
        session.call(sched.add_request, "X", 13, 1)
    except SubmissionError as exc:
        if exc.type_name != "ValueError":
            raise
    steps = [session.call_later(sched.schedule) for _ in range(2)]
    got = [steps[0].value(), steps[1].value()]
    if any(len(plan) for plan in got):
        raise Mismatch(
            f"{dims}, after the refused add_request('X', 13, 1), schedule() answered "
            f"{got[0]!r:.60} then {got[1]!r:.60}: a refused request must not be queued"
        )


def _test_random(replayer: Replayer, rng: Rng) -> None:
    for _ in range(N_RANDOM_SCRIPTS):
        dims = random_dims(rng.py)
        ops = random_script(rng.py, dims, n_requests=rng.py.randint(3, 7), n_ops=rng.py.randint(4, 12))
        replayer.check(dims, ops)


def throughput(seen: Sequence[object], ops: Sequence[Op], n_requests: int) -> tuple[float, int | None, int]:
    """(tokens per step, steps until every request finished, recomputes) of a trace.

    A recompute is a request scheduled for more tokens than it could still have had to compute:
    its cache was reset, which only preemption does."""
    steps = tokens = recomputes = 0
    finish: int | None = None
    computed: dict[str, int] = {}
    outputs: dict[str, int] = {}
    prompt = {op.req_id: op.prompt_len for op in ops if isinstance(op, Add)}
    for op, obs in zip(ops, seen, strict=False):
        if not isinstance(op, Step) or not isinstance(obs, tuple):
            continue
        steps += 1
        for r, n in obs[0]:
            tokens += n
            have = prompt.get(r, 0) + outputs.get(r, 0)
            c = computed.get(r, 0)
            if c + n > have:
                recomputes += 1
                c = 0
            computed[r] = c + n
            if computed[r] >= have:
                outputs[r] = outputs.get(r, 0) + 1
        if finish is None and len(obs[1]) >= n_requests:
            finish = steps
    busy = finish or steps
    return (tokens / busy if busy else 0.0), finish, recomputes


def _test_figure(replayer: Replayer) -> str:
    ops = workload()
    n = sum(isinstance(op, Add) for op in ops)
    got = replayer.submission_trace(WORKLOAD_DIMS, ops)
    want = reference_trace(WORKLOAD_DIMS, ops)
    mine, ref = throughput(got, ops, n), throughput(want, ops, n)

    def text(f: tuple[float, int | None, int]) -> str:
        steps = f"{f[1]} steps to finish" if f[1] is not None else "not all finished"
        return f"{f[0]:.2f} tokens per step, {steps}, {plural(f[2], 'recompute')} after preemption"

    figures = f"{n} requests on {WORKLOAD_DIMS}: yours {text(mine)}; the reference {text(ref)}"
    return figures_if_same(got, want, figures)


def run(session: SubmissionLink, seed: int | None = None) -> CheckReport:
    """The battery; `seed` makes a run reproducible (tests), None draws fresh scripts (grading)."""
    report = CheckReport()
    rng = Rng(seed)
    replayer = Replayer(report, session)
    for name, scripts in RULES:
        run_test(report, name, partial(_test_rule, replayer, scripts))
    run_test(
        report,
        "add_request raises ValueError when "
        "ceil((prompt_len + max_new_tokens - 1) / block_size) > num_blocks",
        partial(_test_value_error, replayer, session),
    )
    run_test(
        report,
        f"whole traces equal the reference's on {N_RANDOM_SCRIPTS} random scripts with tight block and "
        "token budgets",
        partial(_test_random, replayer, rng),
    )
    figure_test(
        report,
        "throughput on a fixed 14-request workload, beside the reference's",
        partial(_test_figure, replayer),
    )
    return report

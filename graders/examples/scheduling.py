"""The Run of continuous-batching: a seeded script of arrivals, the step-by-step trace beside the reference's.

Each row of the trace is one call of the script: an add_request, or a step with what
schedule(), finished() and num_free_blocks() answered. The page shows the submission's rows
beside the reference's and marks the first that differs (graders/examples/compare.py).
"""

from __future__ import annotations

import random
from typing import Any

from graders.checks.continuous_batching_replay import Raised, Replayer, reference_trace
from graders.checks.continuous_batching_script import Dims, Op, plan_text, random_script
from graders.checks.report import CheckReport
from graders.examples.spec import SEED, Compared, Example, InvalidRunInput, Param, RunSpec
from graders.reference.scheduler import blocks_for
from graders.sandbox.protocol import SubmissionLink


def row(seen: Any) -> str:
    """One observation as the page shows it."""
    if seen is None:
        return "ok"
    if isinstance(seen, str):
        return seen  # "ValueError"
    if isinstance(seen, tuple):
        plan, done, free = seen
        return f"{plan_text(plan)}  finished={list(done)}  free={free}"
    return getattr(seen, "text", repr(seen))


def script_for(values: dict[str, Any]) -> tuple[Dims, list[Op]]:
    dims = Dims(
        values["num_blocks"], values["block_size"], values["max_num_batched_tokens"], values["max_num_seqs"]
    )
    py = random.Random(values["seed"])
    ops = random_script(py, dims, n_requests=values["n_requests"], n_ops=values["n_requests"] + 2)
    return dims, ops


def _case(session: SubmissionLink, values: dict[str, Any]) -> list[Compared]:
    dims, ops = script_for(values)
    got = Replayer(CheckReport(), session).submission_trace(dims, ops)
    want = reference_trace(dims, ops)
    labels = [str(op) for op in ops]
    mine = [row(g) for g in got]
    if got and isinstance(got[-1], Raised):  # the rest of the script was never run
        mine += ["(not run)"] * (len(ops) - len(got))
    return [Compared("step-by-step trace", mine, [row(w) for w in want], exact=True, labels=tuple(labels))]


def _fits(values: dict[str, Any]) -> None:
    if blocks_for(2, values["block_size"]) > values["num_blocks"]:
        raise InvalidRunInput("num_blocks must hold at least one request of two tokens", "num_blocks")


CONTINUOUS_BATCHING = RunSpec(
    slug="continuous-batching",
    entry_point="Scheduler",
    summary=(
        "Builds Scheduler(num_blocks, block_size, max_num_batched_tokens, max_num_seqs) and replays a "
        "seeded script of n_requests arrivals between steps, then steps until the trace ends; shows "
        "schedule(), finished() and num_free_blocks() after every step beside the reference's."
    ),
    params=(
        Param("num_blocks", "Blocks", 6, 1, 64),
        Param("block_size", "Block size", 2, 1, 16),
        Param("max_num_batched_tokens", "Token budget per step", 6, 1, 256),
        Param("max_num_seqs", "Most running requests", 3, 1, 32),
        Param("n_requests", "Requests", 4, 1, 12),
        SEED,
    ),
    examples=(
        Example(
            "tight blocks: preemption",
            {
                "num_blocks": 5,
                "block_size": 2,
                "max_num_batched_tokens": 6,
                "max_num_seqs": 3,
                "n_requests": 4,
                "seed": 3,
            },
        ),
        Example(
            "small budget: chunked prefill",
            {
                "num_blocks": 12,
                "block_size": 4,
                "max_num_batched_tokens": 4,
                "max_num_seqs": 4,
                "n_requests": 3,
                "seed": 1,
            },
        ),
    ),
    case=_case,
    rules=(_fits,),
)

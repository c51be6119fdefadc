"""The Run of radix-prefix-cache: a seeded script of match / insert calls, the trace beside the reference's.

Each row of the trace is one call of the script with what it returned and len(cache) after it.
The page shows the submission's rows beside the reference's and marks the first that differs
(graders/examples/compare.py).
"""

from __future__ import annotations

import random
from typing import Any

from graders.checks.radix_prefix_cache_replay import Replayer, reference_trace
from graders.checks.radix_prefix_cache_script import Op, random_script
from graders.checks.report import CheckReport
from graders.examples.spec import SEED, Compared, Example, Param, RunSpec
from graders.sandbox.protocol import SubmissionLink


def row(seen: Any) -> str:
    """One observation as the page shows it."""
    if isinstance(seen, tuple):
        answer, size = seen
        return f"{answer}  len={size}"
    return getattr(seen, "text", repr(seen))


def script_for(values: dict[str, Any]) -> list[Op]:
    return random_script(random.Random(values["seed"]), n_ops=values["n_calls"])


def _case(session: SubmissionLink, values: dict[str, Any]) -> list[Compared]:
    capacity, ops = values["capacity"], script_for(values)
    got = Replayer(CheckReport(), session).submission_trace(capacity, ops)
    want = reference_trace(capacity, ops)
    mine = [row(g) for g in got]
    if got and not isinstance(got[-1], tuple):  # it raised or answered wrongly: the rest never ran
        mine += ["(not run)"] * (len(ops) - len(got))
    labels = tuple(str(op) for op in ops)
    return [Compared("call-by-call trace", mine, [row(w) for w in want], exact=True, labels=labels)]


RADIX_PREFIX_CACHE = RunSpec(
    slug="radix-prefix-cache",
    entry_point="PrefixCache",
    summary=(
        "Builds PrefixCache(capacity) and replays a seeded script of n_calls match and insert calls "
        "on requests that share a few prefixes (token ids 0-5); shows each call's answer and len(cache) "
        "after it beside the reference's."
    ),
    params=(
        Param("capacity", "Capacity (tokens)", 6, 0, 64),
        Param("n_calls", "Calls", 10, 1, 40),
        SEED,
    ),
    examples=(
        Example("small capacity: evictions on most inserts", {"capacity": 4, "n_calls": 10, "seed": 1}),
        Example("room for most: shared prefixes", {"capacity": 12, "n_calls": 12, "seed": 2}),
    ),
    case=_case,
)

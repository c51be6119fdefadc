"""mla-decode: `mla_attention(x, weights, n_heads, cache=None, base=10000.0) -> (y, cache)`.

Every run draws fresh sizes (B, T, d, H, d_nope, d_rope, d_c and d_v all different from each
other, so a swap of two changes the answer) and weights. The layer runs over schedules of calls
(a whole prompt with the cache left out, chunks from cache={} with a base by keyword, a prompt
from cache=None then single tokens with a base by position) and every call's y and returned cache
("c" and the rotated "k_rope", nothing else is read back) are compared with one full pass over all
the tokens (graders/reference/mla.py, float64; mla_decode_calls.py). Every call gets a cache the
grader built itself with only "c" and "k_rope", so a solution that relies on anything else in it
fails, and the probe that changes a cached position looks like any other call. RoPE positions stay
below 64 except in the long-cache test, whose tolerance widens with the position
(shared/CONTRACT.md).

The absorption rule (mla_decode_rule.py) is measured on every decode call (T = 1): the recorder's
largest floating-point tensor must hold fewer than B * H * S * min(d_nope, d_v) numbers where S
makes that well above the latent cache, the scores, the query and every weight. On a long cache
(S = 2048, B = 2, H = 16, mla_decode_long.py) the grader also reads the kernel's peak of the
process's resident memory around each decode call, and a call above a budget that fits the inputs
and outputs twice over and a few score-sized tensors fails whatever the recorder said. The last
test counts a decode call's multiply-adds and largest tensor against the reference's (the cost
report).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from graders.checks.mla_decode_calls import Call, Tokens, changed_cache_test, schedule_test
from graders.checks.mla_decode_long import (
    BASES,
    COST,
    LONG,
    LONG_STEPS,
    cost_test,
    long_cache_test,
    long_dims,
)
from graders.checks.mla_decode_variants import (
    CACHE_MISTAKES,
    GLOBAL_STATE,
    NUMERICAL_MISTAKES,
    PER_HEAD_KEYS,
    PER_HEAD_MEMORY,
    PER_HEAD_VALUES,
)
from graders.checks.report import CheckReport, run_test
from graders.checks.rope_common import DEFAULT_BASE
from graders.checks.serving_common import Rng, figure_test
from graders.reference.mla import MLADims
from graders.sandbox.protocol import SubmissionLink

SLUG = "mla-decode"
ENTRY_POINT = "mla_attention"
KNOWN_MISTAKES = (
    *NUMERICAL_MISTAKES,
    *CACHE_MISTAKES,
    GLOBAL_STATE,
    PER_HEAD_KEYS,
    PER_HEAD_VALUES,
    PER_HEAD_MEMORY,
)
__all__ = ["ENTRY_POINT", "KNOWN_MISTAKES", "SLUG", "run"]


def random_dims(rng: Rng, B: int) -> MLADims:
    """Sizes that differ from each other and from B: even d_rope (RoPE pairs) and d_c, odd d_v."""
    py = rng.py
    H = py.choice([h for h in (2, 3, 4) if h != B])
    return MLADims(
        d=py.choice([24, 30, 36]),
        n_heads=H,
        d_nope=py.choice([8, 10, 12]),
        d_rope=py.choice([r for r in (4, 6) if r != H]),
        d_c=py.choice([14, 16, 18, 20]),
        d_v=py.choice([5, 7, 9, 11]),
    )


# --- the battery ----------------------------------------------------------------------------------


def run(session: SubmissionLink, seed: int | None = None) -> CheckReport:
    """The battery; `seed` makes a run reproducible (tests), None draws fresh inputs (grading)."""
    report = CheckReport()
    rng = Rng(seed)
    py = rng.py

    def check(name: str, body: Callable[[], None]) -> bool:
        return run_test(report, name, body)

    def sizes(dims: MLADims) -> str:
        return (
            f"d={dims.d} H={dims.n_heads} d_nope={dims.d_nope} d_rope={dims.d_rope} d_c={dims.d_c} "
            f"d_v={dims.d_v}"
        )

    T = py.randrange(5, 9)
    seq = Tokens(rng, 1, T, random_dims(rng, 1), DEFAULT_BASE)
    check(
        f"a {T}-token prompt, cache and base left out: y, cache['c'] and the rotated cache['k_rope'], "
        f"B=1 {sizes(seq.dims)}",
        partial(schedule_test, report, session, seq, [T], Call("omit", "omit")),
    )
    base = py.choice(BASES)
    chunks = [py.randrange(3, 6), py.randrange(2, 4), py.randrange(3, 7)]
    seq = Tokens(rng, 2, sum(chunks), random_dims(rng, 2), base)
    check(
        f"chunked prefill in chunks of {', '.join(map(str, chunks))} from cache={{}} equals one pass, "
        f"base={base:g} by keyword, B=2 {sizes(seq.dims)}",
        partial(schedule_test, report, session, seq, chunks, Call("empty", "keyword")),
    )
    base = py.choice(BASES)
    prompt, steps = py.randrange(4, 8), 12
    seq = Tokens(rng, 3, prompt + steps, random_dims(rng, 3), base)
    check(
        f"a {prompt}-token prompt (cache=None) then {steps} decode steps of one token, each measured, "
        f"base={base:g} by position, B=3 {sizes(seq.dims)}",
        partial(schedule_test, report, session, seq, [prompt] + [1] * steps, Call("none", "positional")),
    )
    seq = Tokens(rng, 2, 8, random_dims(rng, 2), py.choice(BASES))
    check(
        "reads the past from the cache passed in: a changed cached latent and RoPE key change the output, "
        f"B=2 {sizes(seq.dims)}",
        partial(changed_cache_test, report, session, seq, 7),
    )
    B, S, dims = long_dims(LONG)
    check(
        f"absorbed decode on a long cache: {LONG_STEPS} decode calls on about {S - LONG_STEPS:,} cached "
        f"positions, B={B} "
        f"H={dims.n_heads} d_nope={dims.d_nope} d_v={dims.d_v} d_c={dims.d_c}, each call's largest tensor "
        "and, from outside your process, its memory measured",
        partial(long_cache_test, report, session, rng),
    )
    figure_test(
        report,
        f"a decode call's cost: multiply-adds and largest tensor counted against the reference's "
        f"(B={COST[0]}, S={COST[1]}, H={COST[3]})",
        partial(cost_test, report, session, rng),
    )
    return report

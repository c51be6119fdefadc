"""radix-prefix-cache: SGLang's RadixAttention cache at token granularity, replayed as whole traces.

The submission's PrefixCache and graders.reference.prefix_cache.PrefixCache get the same scripts
of match / insert calls; after every call the grader compares its answer and len(cache)
(graders/checks/radix_prefix_cache_replay.py). One hand-made script per rule makes that rule
decide the answer (the longest prefix, match refreshing use, insert refreshing the shared
prefix, LRU by the logical clock, leaves only, one leaf at a time, evicting after storing, the
just-inserted path last, the capacity, the newly stored count before eviction); seeded random
scripts with shared prefixes and small capacities check the rules together. A failing script
is shrunk before the verdict shows it, and the known mistake whose trace the submission's
equals is named. The verdict also reports the hit rate on a fixed workload beside the
reference's.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from functools import partial

from graders.checks.radix_prefix_cache_replay import ENTRY_POINT, Replayer, reference_trace
from graders.checks.radix_prefix_cache_script import (
    Insert,
    Match,
    Op,
    lru_script,
    random_capacity,
    random_script,
)
from graders.checks.radix_prefix_cache_variants import Slip, mistake_sentence
from graders.checks.report import CheckReport, run_test
from graders.checks.serving_common import Rng, figure_test
from graders.checks.traces import figures_if_same
from graders.sandbox.protocol import SubmissionLink

SLUG = "radix-prefix-cache"
# The sentences are built from each Slip's behaviour and rule, so the ids are the Slip names
# (graders/mistakes.py); challenge.yaml's mistake_hints are keyed by them.
NAMED_MISTAKES = {s.name: mistake_sentence(s) for s in Slip}
KNOWN_MISTAKES = tuple(NAMED_MISTAKES.values())
__all__ = ["ENTRY_POINT", "KNOWN_MISTAKES", "NAMED_MISTAKES", "SLUG", "run"]


def I(*tokens: int) -> Insert:  # noqa: E743  # one letter keeps the rule scripts readable
    return Insert(tokens)


def M(*tokens: int) -> Match:
    return Match(tokens)


Script = tuple[int, Sequence[Op]]

# One hand-made case per rule: (test name, scripts). Each makes its rule decide the answer;
# tests/graders/checks/test_radix_prefix_cache.py proves every known mistake fails one.
RULES: tuple[tuple[str, tuple[Script, ...]], ...] = (
    (
        "match returns the length of the longest cached prefix",
        ((10, (I(1, 2, 3), M(1, 2, 3, 4), M(1, 2), M(2, 3), M(1, 5), I(1, 5, 6), M(1, 5, 6, 7), M(9))),),
    ),
    (
        "insert shares the cached prefix and returns how many tokens it newly stored",
        ((10, (I(1, 2, 3), I(1, 2, 4), I(1, 2), I(1, 2, 4, 5), I(6))),),
    ),
    (
        "match marks the matched prefix as used, so another leaf is evicted first",
        ((6, (I(1, 2, 3), I(4, 5, 6), M(1, 2, 3), I(7), M(4, 5, 6), M(1, 2, 3))),),
    ),
    (
        "insert marks its shared prefix as used too",
        ((4, (I(1, 2, 3), I(4), I(1, 2), I(5), I(6), M(1, 2), M(4))),),
    ),
    (
        "the least recently used leaf is evicted first, by the logical clock",
        ((4, (I(1), I(2), I(3), M(1), I(4), I(5), M(1), M(2), M(3), M(4), M(5))),),
    ),
    (
        "only a leaf token is evicted, never a token another cached token follows",
        ((3, (I(1, 2, 3), I(4), M(1, 2, 3), M(4))),),
    ),
    (
        "eviction takes one leaf token at a time; its parent may be the next",
        ((4, (I(1, 2, 3), I(4), I(5), M(1, 2, 3), I(6, 7), M(1, 2), M(4))),),
    ),
    (
        "insert stores its tokens first and evicts after, so the prefix it shares is kept",
        ((3, (I(1, 2), I(3), I(1, 2, 4), M(1, 2, 4), M(3))),),
    ),
    (
        "the just-inserted path is evicted last, from its own leaf up",
        ((3, (I(9), I(1, 2, 3, 4), M(1, 2, 3, 4), M(9))),),
    ),
    (
        "at most capacity tokens stay stored, and no fewer than the rule leaves",
        ((4, (I(1, 2, 3, 4), I(5), I(5, 6), M(1, 2, 3))),),
    ),
    (
        "insert's newly stored count is taken before any eviction",
        ((3, (I(1, 2, 3, 4, 5), I(6, 7), I(6, 7, 8))),),
    ),
)

N_RANDOM_SCRIPTS = 8
N_LRU_SCRIPTS = 4

# The workload the hit rate is measured on: fixed, so runs compare.
WORKLOAD_CAPACITY = 64


def workload() -> list[Op]:
    """30 chat turns over 4 system prompts: each turn matches its prompt, then inserts prompt + reply.

    A conversation's next turn extends its last one (prompt = history + a new message), and one of
    the four most recent conversations goes on more often than not, so hits come from both the
    shared system prompts and recent history: the locality LRU is built for."""
    py = random.Random(2025)
    systems = [tuple(py.randrange(100) for _ in range(8)) for _ in range(4)]
    chats: list[tuple[int, ...]] = []
    ops: list[Op] = []
    for _ in range(30):
        if chats and py.random() < 0.6:
            i = py.randrange(max(0, len(chats) - 4), len(chats))
            prompt = chats[i] + tuple(py.randrange(100) for _ in range(py.randint(2, 5)))
        else:
            i = len(chats)
            chats.append(())
            prompt = py.choice(systems) + tuple(py.randrange(100) for _ in range(py.randint(2, 5)))
        chats[i] = prompt + tuple(py.randrange(100) for _ in range(py.randint(2, 6)))  # the reply
        ops += [Match(prompt), Insert(chats[i])]
    return ops


def hit_rate(seen: Sequence[object], ops: Sequence[Op]) -> float:
    """Matched tokens over the tokens asked for, over the workload's matches."""
    asked = matched = 0
    for op, obs in zip(ops, seen, strict=False):
        if isinstance(op, Match) and isinstance(obs, tuple):
            asked += len(op.tokens)
            matched += obs[0]
    return matched / asked if asked else 0.0


def _test_rule(replayer: Replayer, scripts: Sequence[Script]) -> None:
    for capacity, ops in scripts:
        replayer.check(capacity, ops)


def _test_random(replayer: Replayer, rng: Rng) -> None:
    for _ in range(N_RANDOM_SCRIPTS):
        capacity = random_capacity(rng.py)
        replayer.check(capacity, random_script(rng.py, n_ops=rng.py.randint(6, 14)))


def _test_lru(replayer: Replayer, rng: Rng) -> None:
    for _ in range(N_LRU_SCRIPTS):
        replayer.check(*lru_script(rng.py))


def _test_figure(replayer: Replayer) -> str:
    ops = workload()
    got = replayer.submission_trace(WORKLOAD_CAPACITY, ops)
    want = reference_trace(WORKLOAD_CAPACITY, ops)
    asked = sum(len(op.tokens) for op in ops if isinstance(op, Match))
    figures = (
        f"{len(ops) // 2} chat turns on PrefixCache(capacity={WORKLOAD_CAPACITY}), {asked} prompt tokens: "
        f"your hit rate {hit_rate(got, ops):.1%}, the reference's {hit_rate(want, ops):.1%}"
    )
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
        f"whole traces equal the reference's on {N_RANDOM_SCRIPTS} random scripts with shared prefixes "
        "and small capacities",
        partial(_test_random, replayer, rng),
    )
    run_test(
        report,
        f"LRU order on {N_LRU_SCRIPTS} random scripts: fill the cache, use some sequences again, "
        "overflow it, match them all",
        partial(_test_lru, replayer, rng),
    )
    figure_test(
        report, "hit rate on a fixed chat workload, beside the reference's", partial(_test_figure, replayer)
    )
    return report

"""The radix-prefix-cache battery: reference vs two models, the named mistakes, shrinking, the hit rate.

hypothesis's stateful testing drives the reference tree, the worked solution (written apart from
it) and the variants' plain model (a dict of cached prefixes, graders/checks/
radix_prefix_cache_variants.py, with no rule broken) side by side on random calls with shared
prefixes and small capacities; every known mistake must fail the battery on each of 200 seeds
(KVPREP_SWEEP_SEEDS=200 runs them all; CI runs a few).
"""

from __future__ import annotations

import os
import re

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from graders.checks import radix_prefix_cache as check
from graders.checks.radix_prefix_cache_replay import reference_trace, variant_trace
from graders.checks.radix_prefix_cache_script import Insert, Match, shrink
from graders.checks.radix_prefix_cache_variants import Slip, SlippedCache, mistake_sentence
from graders.reference.prefix_cache import PrefixCache
from tests.graders.checks.helpers import (
    assert_every_known_mistake_has_a_golden_case,
    assert_interface_matches,
    assert_solution_passes_cleanly,
    cases_dir,
    challenge_dir,
    passed,
    run,
)

CHALLENGE = challenge_dir(check.SLUG)
SOLUTION = (CHALLENGE / "solution.py").read_text()
SWEEP = int(os.environ.get("KVPREP_SWEEP_SEEDS", "3"))
TOKENS = st.lists(st.integers(0, 3), max_size=6)  # a small alphabet: prefixes are shared often


def solution_class() -> type:
    namespace: dict[str, object] = {}
    exec(SOLUTION, namespace)
    return namespace["PrefixCache"]  # type: ignore[return-value]


class CacheAgainstModels(RuleBasedStateMachine):
    """The reference, the worked solution and the plain model agree on every answer and len."""

    @initialize(capacity=st.integers(0, 9))
    def start(self, capacity: int) -> None:
        self.capacity = capacity
        self.caches = [PrefixCache(capacity), solution_class()(capacity), SlippedCache(None, capacity)]

    @rule(tokens=TOKENS)
    def match(self, tokens: list[int]) -> None:
        answers = [c.match(tokens) for c in self.caches]
        assert answers[0] == answers[1] == answers[2]
        assert answers[0] <= len(tokens)

    @rule(tokens=TOKENS)
    def insert(self, tokens: list[int]) -> None:
        answers = [c.insert(tokens) for c in self.caches]
        assert answers[0] == answers[1] == answers[2]
        assert answers[0] <= len(tokens)

    @invariant()
    def same_contents(self) -> None:
        ref, _, model = self.caches
        assert len(ref) == len(self.caches[1]) == len(model) <= self.capacity
        assert ref.sequences() == set(model.used)  # every cached token's whole path is cached


TestCacheAgainstModels = CacheAgainstModels.TestCase
TestCacheAgainstModels.settings = settings(max_examples=150, stateful_step_count=30, deadline=None)


def test_module_interface_matches_the_challenge() -> None:
    assert_interface_matches(
        check,
        "PrefixCache",
        (
            "def __init__(self, capacity)",
            "def match(self, tokens) -> int",
            "def insert(self, tokens) -> int",
            "before any eviction",
            "leaf token",
        ),  # fmt: skip
    )


def test_the_prompt_example_behaves_as_shown() -> None:
    c = solution_class()(capacity=6)
    assert c.insert([1, 2, 3]) == 3 and c.insert([1, 2, 4, 5]) == 2
    assert c.match([1, 2, 3, 9]) == 3 and len(c) == 5
    assert c.insert([7, 8]) == 2 and len(c) == 6 and c.match([1, 2, 4, 5]) == 3
    c = solution_class()(capacity=3)
    assert c.insert([1, 2, 3]) == 3 and c.insert([4]) == 1 and c.match([1, 2, 3]) == 2
    assert c.insert([5, 6, 7, 8]) == 4 and (len(c), c.match([5, 6, 7, 8])) == (3, 3)


def test_every_known_mistake_has_a_golden_case_that_names_it() -> None:
    assert_every_known_mistake_has_a_golden_case(check)


def test_the_solution_passes_cleanly_on_fresh_inputs() -> None:
    assert_solution_passes_cleanly(check)


def test_the_starter_fails_every_test_without_crashing_the_grader() -> None:
    report, _ = run(check, (CHALLENGE / "starter.py").read_text())
    assert report.tests and not any(t.passed for t in report.tests)
    assert all("NotImplementedError" in t.message for t in report.tests)


def test_each_rule_case_tells_its_mistakes_from_the_rule() -> None:
    """Every known mistake changes the trace of at least one hand-made script."""
    scripts = [s for _, group in check.RULES for s in group]
    for slip in Slip:
        assert any(variant_trace(slip, c, ops) != reference_trace(c, ops) for c, ops in scripts), slip


def test_the_plain_model_without_a_slip_is_the_reference_on_every_rule_case() -> None:
    for _, group in check.RULES:
        for capacity, ops in group:
            model = SlippedCache(None, capacity)
            assert [(model.match(list(o.tokens)) if isinstance(o, Match) else model.insert(list(o.tokens)),
                     len(model)) for o in ops] == reference_trace(capacity, ops)  # fmt: skip


@pytest.mark.parametrize("case", sorted(cases_dir(check.SLUG).glob("*.py")), ids=lambda p: p.stem)
def test_every_named_mistake_fails_on_every_seed(case) -> None:  # type: ignore[no-untyped-def]
    """The sweep: KVPREP_SWEEP_SEEDS=200 runs seeds 0-199 (`kvprep sweep` does the same; see the README)."""
    text = case.read_text()
    if "# expect: failed" not in text:
        pytest.skip("not a named mistake")
    phrase = text.split("# diagnosis: ", 1)[1].split("\n", 1)[0]
    for seed in range(SWEEP):
        report, _ = run(check, text, seed=seed)
        assert not passed(report), seed
        feedback = " ".join(report.diagnosis + [t.message for t in report.tests])
        assert phrase in feedback, (seed, feedback)


@pytest.mark.parametrize("slip", list(Slip), ids=lambda s: s.name)
def test_each_mistake_is_named_alone(slip: Slip) -> None:
    """A golden case of one mistake is diagnosed with that mistake and no other."""
    case = next(
        p for p in cases_dir(check.SLUG).glob("*.py")
        if re.search(rf"^# diagnosis: {re.escape(slip.value)}$", p.read_text(), re.M)
    )  # fmt: skip
    report, _ = run(check, case.read_text(), seed=11)
    assert report.diagnosis == [mistake_sentence(slip)]


def test_a_failing_script_is_shrunk_and_the_rule_named() -> None:
    code = (cases_dir(check.SLUG) / "evicts_inner.py").read_text()
    report, _ = run(check, code, seed=3)
    leaves = next(t for t in report.tests if t.name.startswith("only a leaf token"))
    assert not leaves.passed
    assert leaves.message.startswith(
        "PrefixCache(capacity=3), after insert [1, 2, 3], insert [4], match [1]: match returned 0, "
        "the rule's answer is 1, because only a leaf token"
    ), leaves.message
    assert "the rule's cache then held [1, 2], [4]" in leaves.message
    assert mistake_sentence(Slip.EVICTS_INNER) in report.diagnosis


def test_shrink_finds_a_one_minimal_failing_script() -> None:
    ops = [Insert((7,)), Insert((1, 2, 3)), Match((7,)), Insert((4, 5)), Match((1, 2, 3)), Insert((6,))]

    def fails(candidate: list) -> int | None:  # type: ignore[type-arg]
        got = variant_trace(Slip.MOST_RECENT, 4, candidate)
        want = reference_trace(4, candidate)
        return next((i for i, (g, w) in enumerate(zip(got, want, strict=True)) if g != w), None)

    small = shrink(ops, fails, budget=200)
    assert fails(small) is not None and len(small) < len(ops)
    assert all(fails(small[:i] + small[i + 1 :]) is None for i in range(len(small)))  # no op to spare


def test_the_verdict_reports_the_hit_rate_beside_the_reference() -> None:
    report, _ = run(check, SOLUTION, seed=2)
    figure = report.tests[-1]
    assert figure.passed and re.search(r"your hit rate (\d+\.\d)%, the reference's \1%", figure.message)
    bad, _ = run(check, (cases_dir(check.SLUG) / "most_recent.py").read_text(), seed=2)
    assert not bad.tests[-1].passed
    mine, ref = map(float, re.findall(r"(\d+\.\d)%", bad.tests[-1].message))
    assert mine < ref  # evicting the freshest leaf loses hits on a workload with locality


def test_hit_rate_counts_matched_over_asked_tokens() -> None:
    ops = [Insert((1, 2)), Match((1, 2, 3, 4)), Match((5, 6))]
    assert check.hit_rate([(2, 2), (2, 2), (0, 2)], ops) == pytest.approx(2 / 6)


def test_scripts_are_fresh_every_run_and_reproducible_with_a_seed() -> None:
    spy = "SEEN = []\n" + SOLUTION.replace(
        "        self.capacity = capacity\n",
        "        SEEN.append(capacity)\n        self.capacity = capacity\n",
    )
    runs = []
    for seed in (None, None, 5, 5):
        _, session = run(check, spy, seed=seed)
        runs.append(tuple(session.module.SEEN))
    assert runs[0] != runs[1] and runs[2] == runs[3]


def test_a_mistake_no_variant_explains_is_told_from_the_rules_state() -> None:
    """No name is given, and the reason says what the reference held at that call."""
    odd = SOLUTION.replace("        return matched\n", "        return matched + (matched > 2)\n")
    report, _ = run(check, odd, seed=1)
    first = report.tests[0]
    assert not report.diagnosis and not first.passed
    assert first.message == (
        "PrefixCache(capacity=10), after insert [1, 2, 3], match [1, 2, 3]: match returned 4, the rule's "
        "answer is 3, because the rule's cache held [1, 2, 3] of it: the longest cached prefix; "
        "the rule's cache then held [1, 2, 3]"
    )

"""The beam-search battery: its rules against the named mistakes, the grader's model, naming and sweeping.

Every known mistake must fail the battery on each of 200 seeds, named (KVPREP_SWEEP_SEEDS=200 runs them
all; CI runs a few). The grader's model is stateful (caches it gives out, stepped and reordered):
hypothesis's stateful testing drives it beside a plain list of histories.
"""

from __future__ import annotations

import os
import re
from functools import partial

import pytest
import torch
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from graders.checks import beam_search as check
from graders.checks.beam_search_cases import draw, random_search, reference, same, variant
from graders.checks.beam_search_model import HistoryModel
from graders.checks.beam_search_variants import Slip, mistake_sentence
from graders.checks.serving_common import Rng
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


def test_module_interface_matches_the_challenge() -> None:
    assert_interface_matches(
        check,
        "beam_search",
        (
            "def beam_search(model, prompt, beam_width, max_new_tokens, eos_id=None, length_penalty=1.0)",
            "model.reorder(cache, rows) -> cache",
            "is **below `beam_width`**",
            "n ** length_penalty",
        ),  # fmt: skip
    )


def test_every_known_mistake_has_a_golden_case_that_names_it() -> None:
    assert_every_known_mistake_has_a_golden_case(check)


def test_the_solution_passes_cleanly_on_fresh_inputs() -> None:
    assert_solution_passes_cleanly(check)


def test_the_starter_fails_every_test_without_crashing_the_grader() -> None:
    report, _ = run(check, (CHALLENGE / "starter.py").read_text())
    assert report.tests and not any(t.passed for t in report.tests)
    assert all("NotImplementedError" in t.message for t in report.tests) and not report.diagnosis


def test_each_rule_test_tells_its_mistakes_from_the_rule() -> None:
    """Every named mistake is some rule test's telling mistake, and a draw finds a search that tells it."""
    told = {slip for *_, groups in check.RULES for group in groups for slip in group}
    assert told == set(Slip)
    rng = Rng(4)
    for _, _, make, groups in check.RULES:
        for group in groups:
            search, want = draw(partial(make, rng), group)
            assert all(not same(variant(search, slip), want) for slip in group)


def test_the_variants_without_a_slip_are_the_reference() -> None:
    rng = Rng(9)
    for _ in range(60):
        search = random_search(rng)
        assert same(variant(search, None), reference(search))  # type: ignore[arg-type]


@pytest.mark.parametrize("case", sorted(cases_dir(check.SLUG).glob("*.py")), ids=lambda p: p.stem)
def test_every_named_mistake_fails_on_every_seed(case) -> None:  # type: ignore[no-untyped-def]
    """The sweep: KVPREP_SWEEP_SEEDS=200 runs seeds 0-199 (`kvprep sweep` does the same; see the README)."""
    text = case.read_text()
    if "# expect: error" in text:  # no entry point: every seed fails, with no mistake to name
        for seed in range(SWEEP):
            report, _ = run(check, text, seed=seed)
            assert not passed(report) and not report.diagnosis, seed
        return
    if "# expect: failed" not in text:
        for seed in range(SWEEP):
            report, _ = run(check, text, seed=seed)
            assert passed(report) and not report.diagnosis, (seed, report.tests)
        return
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
    for seed in (11, 12):
        report, _ = run(check, case.read_text(), seed=seed)
        assert report.diagnosis == [mistake_sentence(slip)], (seed, report.diagnosis)


def test_a_mistake_no_variant_explains_is_shown_but_not_named() -> None:
    odd = SOLUTION.replace("final(i)) for i in ranked", "final(i) - (i == 0)) for i in ranked")
    report, _ = run(check, odd, seed=1)
    assert not passed(report) and not report.diagnosis
    first = next(t for t in report.tests if not t.passed)
    assert "you returned [" in first.message and "; the rule returns [" in first.message
    assert "; the rule: " in first.message


def test_a_refused_call_fails_with_the_model_s_words_even_when_caught() -> None:
    """The refusal is recorded on the grader's side: swallowing the exception does not hide it."""
    sneaky = SOLUTION.replace(
        "    log_probs, cache = model.prefill(list(prompt))\n",
        "    log_probs, cache = model.prefill(list(prompt))\n"
        "    try:\n        model.step(torch.tensor([0, 0, 0]), cache)\n"
        "    except ValueError:\n        pass\n",
    )
    report, _ = run(check, sneaky, seed=2)
    first = next(t for t in report.tests if not t.passed)
    assert "the model refused a call: step's tokens hold 3 ids for the cache's 1 rows" in first.message


def test_recomputing_with_the_right_answer_fails_on_the_call_count() -> None:
    report, _ = run(check, (cases_dir(check.SLUG) / "prefill_again.py").read_text(), seed=3)
    assert not passed(report)
    assert any(re.search(r"called model\.prefill \d+ times", t.message) for t in report.tests)


def test_stepping_rows_the_rule_does_not_have_fails_and_says_which() -> None:
    report, _ = run(check, (cases_dir(check.SLUG) / "eos_takes_slot.py").read_text(), seed=5)
    messages = " ".join(t.message for t in report.tests)
    shape = (
        r"at position \d+ your search stepped rows \[.*\] \(each row's tokens after the prompt\), the rule's"
    )
    assert re.search(shape + r" live beams are \[", messages)


def test_the_verdict_shows_the_fixed_search_s_hypotheses_beside_the_reference() -> None:
    report, _ = run(check, SOLUTION, seed=2)
    figure = report.tests[-1]
    assert figure.passed and re.search(r"yours (.*); the reference's \1$", figure.message), figure.message
    bad, _ = run(check, (cases_dir(check.SLUG) / "drops_live.py").read_text(), seed=2)
    assert not bad.tests[-1].passed and "; the reference's [3 1 4 | " in bad.tests[-1].message


def test_settings_are_fresh_every_run_and_reproducible_with_a_seed() -> None:
    spy = "SEEN = []\n" + SOLUTION.replace(
        "    log_probs, cache = model.prefill(list(prompt))\n",
        "    SEEN.append((tuple(prompt), beam_width, max_new_tokens, eos_id, length_penalty))\n"
        "    log_probs, cache = model.prefill(list(prompt))\n",
    )
    runs = []
    for seed in (None, None, 5, 5):
        _, session = run(check, spy, seed=seed)
        runs.append(tuple(session.module.SEEN))
    assert runs[0] != runs[1] and runs[2] == runs[3]
    styles = {(eos, penalty) for _, _, _, eos, penalty in runs[2]}
    assert (None, 1.0) in styles and len(styles) > 3  # defaults left out, and other values passed


def test_optional_arguments_are_passed_by_keyword_by_position_and_left_out() -> None:
    spy = "CALLS = []\n" + SOLUTION.replace(
        "def beam_search(model, prompt, beam_width, max_new_tokens, eos_id=None, length_penalty=1.0):\n",
        "def beam_search(model, prompt, beam_width, max_new_tokens, *rest, **named):\n"
        "    CALLS.append((len(rest), sorted(named)))\n"
        "    eos_id, length_penalty = (list(rest) + [None, 1.0][len(rest):])[:2]\n"
        "    eos_id = named.get('eos_id', eos_id)\n"
        "    length_penalty = named.get('length_penalty', length_penalty)\n",
    )
    report, session = run(check, spy, seed=6)
    assert passed(report), report.tests
    assert {(0, ("eos_id", "length_penalty")), (2, ()), (0, ())} <= {
        (n, tuple(k)) for n, k in session.module.CALLS
    }


# --- the grader's model, model-based -------------------------------------------------------------


class ModelAgainstHistories(RuleBasedStateMachine):
    """HistoryModel's caches behave as a plain list of row histories: step appends, reorder gathers."""

    @initialize(
        seed=st.integers(0, 2**31 - 1),
        vocab=st.integers(2, 6),
        prompt=st.lists(st.integers(0, 1), min_size=1),
    )
    def start(self, seed: int, vocab: int, prompt: list[int]) -> None:
        self.model = HistoryModel(seed, vocab, eos_id=0)
        log_probs, self.cache = self.model.prefill(prompt)
        self.rows = [tuple(prompt)]
        assert torch.equal(log_probs, torch.tensor(self.model.row(tuple(prompt))))

    @rule(data=st.data())
    def step(self, data: st.DataObject) -> None:
        tokens = data.draw(
            st.lists(st.integers(0, self.model.vocab - 1), min_size=len(self.rows), max_size=len(self.rows))
        )
        log_probs, self.cache = self.model.step(torch.tensor(tokens), self.cache)
        self.rows = [h + (t,) for h, t in zip(self.rows, tokens, strict=True)]
        assert torch.equal(log_probs, torch.tensor([self.model.row(h) for h in self.rows]))

    @precondition(lambda self: len(self.rows) < 40)
    @rule(data=st.data())
    def reorder(self, data: st.DataObject) -> None:
        picked = data.draw(st.lists(st.integers(0, len(self.rows) - 1), min_size=1, max_size=5))
        self.cache = self.model.reorder(self.cache, torch.tensor(picked))
        self.rows = [self.rows[i] for i in picked]

    @rule(n=st.integers(0, 3))
    def step_with_the_wrong_number_of_tokens(self, n: int) -> None:
        if n == len(self.rows):
            return
        before = len(self.model.refusals)
        with pytest.raises(ValueError, match="one token for each row of the cache"):
            self.model.step(torch.zeros(n, dtype=torch.long), self.cache)
        assert len(self.model.refusals) == before + 1

    @rule()
    def a_cache_from_elsewhere_is_refused(self) -> None:
        other = HistoryModel(0, self.model.vocab)
        _, foreign = other.prefill([0])
        with pytest.raises(TypeError, match="not a cache this model returned"):
            self.model.step(torch.zeros(1, dtype=torch.long), foreign)

    @invariant()
    def the_cache_holds_the_histories(self) -> None:
        assert list(self.cache.rows) == self.rows


TestModelAgainstHistories = ModelAgainstHistories.TestCase
TestModelAgainstHistories.settings = settings(max_examples=60, stateful_step_count=20, deadline=None)


def test_the_model_refuses_float_tokens_and_rows_out_of_range() -> None:
    model = HistoryModel(1, 5)
    _, cache = model.prefill([1, 2])
    with pytest.raises(TypeError, match="must be a LongTensor"):
        model.step(torch.tensor([1.0]), cache)
    with pytest.raises(ValueError, match=r"must lie in 0..0"):
        model.reorder(cache, torch.tensor([1]))
    with pytest.raises(ValueError, match="outside 0..4"):
        model.prefill([7])
    assert len(model.refusals) == 3 and model.prefills == 1


@pytest.mark.sandbox
def test_searches_after_one_that_raised_are_still_made_and_judged_in_the_sandbox() -> None:
    """Every search goes out in one round trip; one that raises stops that batch, and each search
    after it, never made there, is made alone: the sandbox's verdict is the in-process one."""
    from graders.limits import Limits
    from graders.sandbox.client import shared_client

    code = SOLUTION.replace(
        "    log_probs, cache = model.prefill(list(prompt))\n",
        "    if max_new_tokens == 1:\n        raise ValueError('one token')\n"
        "    log_probs, cache = model.prefill(list(prompt))\n",
    )
    assert code != SOLUTION
    with shared_client().open(Limits()) as session:
        session.load(code)
        sandboxed = check.run(session, seed=3)
        trips = session.round_trips
    in_process, _ = run(check, code, seed=3)
    outcomes = [(t.name, t.passed) for t in sandboxed.tests]
    assert outcomes == [(t.name, t.passed) for t in in_process.tests]
    one_token = next(t for t in sandboxed.tests if t.name.startswith("max_new_tokens=1"))
    assert not one_token.passed and "ValueError: one token" in one_token.message
    assert sandboxed.tests[-1].passed and sandboxed.tests[-2].passed  # made alone, after the failure
    assert trips > 3  # the batch, then each search after the one that raised on its own

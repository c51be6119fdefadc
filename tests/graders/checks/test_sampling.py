"""The sampling battery: speed, fresh logits, named mistakes, every argument, swaps and probes."""

from __future__ import annotations

import pytest
import torch

from graders.checks import sampling as check
from graders.checks import sampling_variants as variants
from graders.checks.report import close
from graders.checks.serving_common import Rng
from graders.reference.sampling import filter_probs
from tests.graders.checks.helpers import (
    assert_every_known_mistake_has_a_golden_case,
    assert_fails_with_messages,
    assert_interface_matches,
    assert_solution_passes_cleanly,
    challenge_dir,
    passed,
    run,
    seen_per_seed,
)

CHALLENGE = challenge_dir(check.SLUG)
SOLUTION = (CHALLENGE / "solution.py").read_text()


def test_module_interface_matches_the_challenge() -> None:
    assert_interface_matches(
        check,
        "filter_probs",
        ("filter_probs(logits, temperature=1.0, top_k=0, top_p=1.0)", "sample(logits, u,", "ValueError"),
    )


def test_the_prompt_examples_behave_as_shown() -> None:
    namespace: dict[str, object] = {}
    exec(SOLUTION, namespace)
    fp, sample = namespace["filter_probs"], namespace["sample"]
    logits = torch.tensor([[2.0, 1.0, 2.0, 0.0]])
    assert fp(logits, temperature=0).tolist() == [[1.0, 0.0, 0.0, 0.0]]  # type: ignore[operator]
    assert fp(logits, top_k=1).tolist() == [[1.0, 0.0, 0.0, 0.0]]  # type: ignore[operator]
    assert fp(logits, top_k=2).tolist() == fp(logits, top_p=0.5).tolist() == [[0.5, 0.0, 0.5, 0.0]]  # type: ignore[operator]
    assert sample(logits, torch.tensor([0.6]), top_k=2).tolist() == [2]  # type: ignore[operator]


def test_every_known_mistake_has_a_golden_case_that_names_it() -> None:
    assert_every_known_mistake_has_a_golden_case(check)


def test_the_solution_passes_cleanly_on_fresh_inputs() -> None:
    assert_solution_passes_cleanly(check)


def test_the_starter_fails_every_test_without_crashing_the_grader() -> None:
    report, _ = run(check, (CHALLENGE / "starter.py").read_text())
    assert report.tests and not any(t.passed for t in report.tests)


SPY = SOLUTION.replace(
    "    _check(temperature, top_k, top_p)\n    B, V = logits.shape\n",
    "    SEEN.append((tuple(logits.shape), temperature, top_k, top_p, float(logits.sum())))\n"
    "    _check(temperature, top_k, top_p)\n    B, V = logits.shape\n",
)


def test_logits_are_fresh_on_every_run_and_every_argument_gets_a_non_default_value() -> None:
    runs = seen_per_seed(check, "SEEN = []\n" + SPY, seed=5)
    calls = runs[0]
    assert any(t not in (0.0, 1.0) for _, t, _, _, _ in calls)  # a real temperature
    assert any(t == 0.0 for _, t, _, _, _ in calls)  # greedy
    assert any(0 < k < shape[1] for shape, _, k, _, _ in calls)  # a cutting top_k
    assert any(k >= shape[1] for shape, _, k, _, _ in calls)  # top_k >= V
    assert any(0 < p < 1 for _, _, _, p, _ in calls)  # a cutting top_p
    assert any(shape[1] > 50 and (t, k, p) == (1.0, 0, 1.0) for shape, t, k, p, _ in calls)  # the defaults


@pytest.mark.parametrize(
    "old, new",
    [
        (
            "def filter_probs(logits, temperature=1.0, top_k=0, top_p=1.0):",
            "def filter_probs(logits, temperature=1.0, top_p=1.0, top_k=0):",
        ),
        (
            "def filter_probs(logits, temperature=1.0, top_k=0, top_p=1.0):",
            "def filter_probs(logits, top_k=0, temperature=1.0, top_p=1.0):",
        ),
        (
            "def filter_probs(logits, temperature=1.0, top_k=0, top_p=1.0):",
            "def filter_probs(logits, temperature=1.0, top_k=50, top_p=1.0):",
        ),
        (
            "def sample(logits, u, temperature=1.0, top_k=0, top_p=1.0):",
            "def sample(u, logits, temperature=1.0, top_k=0, top_p=1.0):",
        ),
        (
            "    probs = filter_probs(logits, temperature, top_k, top_p)  # (B, V)",
            "    probs = filter_probs(logits, temperature, top_k)  # (B, V)",
        ),
    ],
    ids=[
        "top_k and top_p swapped",
        "temperature and top_k swapped",
        "default top_k of 50",
        "sample's arguments swapped",
        "sample drops top_p",
    ],
)
def test_a_swapped_ignored_or_defaulted_argument_is_caught(old: str, new: str) -> None:
    assert old in SOLUTION
    report, _ = run(check, SOLUTION.replace(old, new), seed=2)
    assert not passed(report)


def test_a_submission_that_behaves_only_on_the_defaults_probe_still_fails() -> None:
    """Every call has the same B and V, so a sampler cannot treat 'the large-vocabulary call' apart:
    one that ignores top_k on vocabularies over 50 fails the tests that pass top_k."""
    cheat = SOLUTION.replace("    if 0 < top_k < V:\n", "    if 0 < top_k < V and V <= 50:\n")
    report, _ = run(check, cheat, seed=1)
    assert not passed(report)
    assert variants.TOP_K_IGNORED in report.diagnosis


def test_the_combined_case_tells_every_wrong_order_apart() -> None:
    rng = Rng(3)
    logits, t, k, p = variants.telling_case(rng, 3, 16)
    want = filter_probs(logits.double(), t, k, p)
    for name, wrong in variants.filter_variants(logits.double(), t, k, p).items():
        if name in variants.TELLING:
            assert not close(wrong, want), name


ODD = {
    "returns None": "    return None\n",
    "returns a list": "    return (probs / probs.sum(dim=-1, keepdim=True)).tolist()\n",
    "returns the wrong shape": "    return (probs / probs.sum(dim=-1, keepdim=True))[0]\n",
    "returns ints": "    return (probs > 0).long()\n",
}


@pytest.mark.parametrize("what", list(ODD))
def test_odd_return_values_fail_with_a_message_not_a_crash(what: str) -> None:
    line = "    return probs / probs.sum(dim=-1, keepdim=True)  # (B, V)\n"
    assert line in SOLUTION
    assert_fails_with_messages(check, SOLUTION.replace(line, ODD[what]))

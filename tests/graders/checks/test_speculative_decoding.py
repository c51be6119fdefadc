"""The speculative-decoding battery: speed, crafted cases, the property, swaps and probes."""

from __future__ import annotations

import pytest
import torch

from graders.checks import speculative_decoding as check
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
        check, "accept_draft", ("accept_draft(draft_tokens, q_probs, p_probs, u_accept, u_sample)", "p[γ]")
    )


def test_the_prompt_example_behaves_as_shown() -> None:
    namespace: dict[str, object] = {}
    exec(SOLUTION, namespace)
    accept = namespace["accept_draft"]
    q = torch.tensor([[0.5, 0.5], [0.5, 0.5]])
    p = torch.tensor([[0.25, 0.75], [0.5, 0.5], [0.0, 1.0]])
    assert accept(torch.tensor([0, 1]), q, p, torch.tensor([0.5, 0.0]), 0.0) == [1]  # type: ignore[operator]
    assert accept(torch.tensor([0, 1]), q, p, torch.tensor([0.49, 0.3]), 0.0) == [0, 1, 1]  # type: ignore[operator]


def test_every_known_mistake_has_a_golden_case_that_names_it() -> None:
    assert_every_known_mistake_has_a_golden_case(check)


def test_the_solution_passes_cleanly_on_fresh_inputs() -> None:
    assert_solution_passes_cleanly(check)


def test_the_starter_fails_every_test_without_crashing_the_grader() -> None:
    report, _ = run(check, (CHALLENGE / "starter.py").read_text())
    assert report.tests and not any(t.passed for t in report.tests)
    assert all("NotImplementedError" in t.message for t in report.tests)


def test_the_verdict_reports_the_acceptance_rate_of_the_crafted_case() -> None:
    report, _ = run(check, SOLUTION, seed=6)
    figure = report.tests[-1]
    assert figure.passed and "accepted the draft" in figure.message and "Σ min(p, q)" in figure.message
    rates = [part.split("%")[0].split()[-1] for part in figure.message.split(" of the time")[:1]]
    assert rates and rates[0].replace(".", "").isdigit()


def test_every_crafted_grid_is_exact() -> None:
    for seed in range(20):
        q, p = check.grid_distributions(check.Rng(seed))
        assert sum(q) == sum(p) == 16 and min(q) > 0
        w = [max(0, a - b) for a, b in zip(p, q, strict=True)]
        assert all(4 * x % sum(w) == 0 for x in w)


RESIDUAL_MISTAKES = (
    check.RESIDUAL_IS_P,
    check.RESIDUAL_Q_MINUS_P,
    check.RESIDUAL_UNNORMALISED,
    check.RESIDUAL_NOT_CLAMPED,
)


def test_the_crafted_rejection_tells_every_wrong_residual_from_the_others() -> None:
    """Each wrong residual gives its own answer on the crafted rejection, so the verdict cannot
    name one for another (the unclamped and the unnormalised draw agreed on about 1 seed in 7)."""
    for seed in range(200):
        case = check.crafted_rejection(check.Rng(seed))
        answers = [tuple(check.wrong_step(*case, m)) for m in RESIDUAL_MISTAKES]
        answers.append(tuple(check.accept_draft(*case)))
        assert len(set(answers)) == len(answers), (seed, answers)


SPY = SOLUTION.replace(
    "    out = []\n",
    "    SEEN.append((tuple(q_probs.shape), float(u_accept.sum()), u_sample))\n    out = []\n",
    1,
)


def test_inputs_are_fresh_on_every_run_and_reproducible_with_a_seed() -> None:
    runs = seen_per_seed(check, "SEEN = []\n" + SPY, seed=2)
    gammas = {shape[0] for shape, _, _ in runs[0]}
    assert len(gammas) >= 2 and len(runs[0]) > 64  # the grid and the crafted and random cases


@pytest.mark.parametrize(
    "old, new",
    [
        (
            "def accept_draft(draft_tokens, q_probs, p_probs, u_accept, u_sample):",
            "def accept_draft(draft_tokens, p_probs, q_probs, u_accept, u_sample):",
        ),
        (
            "        if u_accept[i] < torch.clamp(ratio, max=1.0):",
            "        if u_sample < torch.clamp(ratio, max=1.0):",
        ),
        (
            "        return out + [_draw(residual, u_sample)]  # the later drafts are dropped",
            "        return out + [_draw(residual, float(u_accept[i]))]",
        ),
    ],
    ids=["q and p swapped", "u_sample used to accept", "u_accept used to draw"],
)
def test_a_swapped_argument_is_caught(old: str, new: str) -> None:
    assert old in SOLUTION
    assert not passed(run(check, SOLUTION.replace(old, new), seed=1)[0])


def test_a_submission_that_recognises_the_crafted_cases_still_fails() -> None:
    """Right on small vocabularies (like the crafted cases), resampling from p otherwise: the random
    cases share the crafted cases' grid of values, and one of them is drawn so that this shows."""
    cheat = SOLUTION.replace(
        "        residual = torch.clamp(p_probs[i] - q_probs[i], min=0.0)  # (V,)\n",
        "        residual = torch.clamp(p_probs[i] - q_probs[i], min=0.0)\n"
        "        if p_probs.shape[-1] > 6:\n"
        "            residual = p_probs[i]\n",
    )
    report, _ = run(check, cheat, seed=1)
    assert not passed(report)
    assert any("random case" in t.name and not t.passed for t in report.tests)


ODD = {
    "returns None": "    return None\n",
    "returns floats": "    return [float(t) for t in out + [_draw(p_probs[len(out)], u_sample)]]\n",
    "returns a string": '    return "1, 2"\n',
}


@pytest.mark.parametrize("what", list(ODD))
def test_odd_return_values_fail_with_a_message_not_a_crash(what: str) -> None:
    line = "    return out + [_draw(p_probs[len(out)], u_sample)]\n"
    assert line in SOLUTION
    assert_fails_with_messages(check, SOLUTION.replace(line, ODD[what]))

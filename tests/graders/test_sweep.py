"""The seed sweep (graders/sweep.py, `kvprep sweep`): CI's fixed handful of its seeds, and the
command itself. The full 200 seeds run with `kvprep sweep` before a battery change is done.

And, from the same seed-0 reports, each golden case's verdict and diagnosis phrases and each golden
mistake's own hint: grading every golden case is most of this file's time, so it is done once per
case and seed (a file's tests share one pytest-xdist process)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.services.mistake_hints import with_mistake_hints
from graders.checks import CHALLENGE_MODULES
from graders.checks.remembered import remembering
from graders.mistakes import mistakes_in, named_mistakes
from graders.sweep import (
    CHALLENGES,
    SweepCase,
    failing_cases,
    format_outcome,
    grade_in_process,
    main,
    sweep_case,
)
from tests.graders.golden import Case, golden_cases, hints_of

# CI's handful of the sweep's seeds. A mistake is graded on three (the full 200 run with `kvprep
# sweep` whenever a battery changes, README); a right answer on two more, the seeds that once made
# a too-tight test fail it.
CI_SEEDS = (0, 1, 2)
RIGHT_ANSWER_SEEDS = (*CI_SEEDS, 14, 82)
_SEED_ZERO: dict[tuple[str, Path], Any] = {}


@pytest.fixture(scope="module", autouse=True)
def _shared_variants() -> Iterator[None]:
    """One scope for the file: a challenge's golden cases on a seed draw the same inputs, so the
    known-wrong variants a battery computes to name a mistake are computed once for all of them."""
    with remembering():
        yield


def graded(slug: str, path: Path, seed: int) -> Any:
    """grade_in_process, remembering seed 0's reports for the hint test below."""
    if seed != 0:
        return grade_in_process(slug, path, seed)
    key = (slug, path.resolve())
    if key not in _SEED_ZERO:
        _SEED_ZERO[key] = grade_in_process(slug, path, seed)
    return _SEED_ZERO[key]


@pytest.mark.parametrize("case", failing_cases(with_passing=True), ids=lambda c: c.id)
def test_every_golden_case_on_the_ci_seeds(case: SweepCase) -> None:
    for seed in RIGHT_ANSWER_SEEDS if case.must_pass else CI_SEEDS:
        outcome = sweep_case(case, range(seed, seed + 1), graded)
        assert outcome.crashed is None, outcome.crashed
        assert not outcome.passed_on and not outcome.failed_on, format_outcome(outcome)
        assert not outcome.unnamed_on, format_outcome(outcome)


@pytest.mark.parametrize("case", golden_cases(), ids=lambda c: c.id)
def test_golden_case_in_process(case: Case) -> None:
    """The battery's verdict on each golden case, in-process (the checks' logic; the sandbox's own
    suite, tests/graders/sandbox/test_golden_sandbox.py, grades them again behind its walls)."""
    expect, phrases = case.expected()
    if expect not in {"passed", "failed", "error"}:
        pytest.skip("limits are only enforced by the sandbox")
    if case.outside_only:
        pytest.skip("measured from outside the submission's process: the sandbox harness judges it")
    report = graded(case.slug, case.path, 0)
    if report is None:  # it did not load, or it lacks the entry point
        assert expect == "error"
        return
    verdict = "passed" if report.tests and all(t.passed for t in report.tests) else "failed"
    assert verdict == expect, [t for t in report.tests if not t.passed]
    feedback = " ".join(report.diagnosis + [t.message for t in report.tests])
    for phrase in phrases:
        assert phrase in feedback, f"expected {phrase!r} in the feedback: {feedback}"


def test_a_mistake_that_passes_is_reported_with_its_seeds() -> None:
    right = SweepCase("kv-cache-bytes", CHALLENGES / "kv-cache-bytes" / "solution.py")  # called a mistake
    outcome = sweep_case(right, range(3))
    assert outcome.passed_on == [0, 1, 2]
    assert "fails on 0/3 seeds, PASSES on seeds [0, 1, 2]" in format_outcome(outcome)


def test_the_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--seeds", "2", "--challenge", "kv-cache-bytes", "--with-passing"]) == 0
    out = capsys.readouterr().out
    assert "golden mistakes x 2 seeds" in out and "0 pass on some seed" in out and "0 failing" in out
    assert main(["--challenge", "no-such-challenge"]) == 2
    assert main(["--seeds", "0"]) == 2


def own_mistakes(case: Case) -> set[str]:
    """The ids whose sentence holds one of the case's `# diagnosis:` phrases (none for a case whose
    phrase is in a test's message only, such as 'your code raised NotImplementedError')."""
    _, phrases = case.expected()
    return {m for m, sentence in named_mistakes(case.slug).items() if any(p in sentence for p in phrases)}


@pytest.mark.parametrize("slug", sorted(CHALLENGE_MODULES))
def test_each_golden_mistake_shows_its_own_hint(slug: str) -> None:
    hints = hints_of(slug)
    checked: list[str] = []
    firsts = 0
    for case in golden_cases():
        expect, _ = case.expected()
        own = own_mistakes(case) if case.slug == slug and expect == "failed" else set()
        if not own or case.outside_only:
            continue
        report = graded(slug, case.path, 0)  # a seed of the sweep (kvprep sweep names every mistake on 0-199)
        assert report is not None, f"{case.id}: did not load"
        result = {"challenge": slug, "verdict": "failed", "tests": [], "diagnosis": report.diagnosis}
        shown = with_mistake_hints(result, hints).get("mistake_hints", [])
        assert shown, f"{case.id}: no mistake hint for the diagnosis {report.diagnosis}"
        # The first hint is the first named mistake's; a case that also trips another mistake the
        # battery names earlier (moe-routing's capacity_renormalised) shows its own right after.
        assert shown[0]["mistake"] == mistakes_in(slug, report.diagnosis)[0]
        assert own & {h["mistake"] for h in shown}, f"{case.id}: no hint for {own} among {shown}"
        assert all(h["hint"] == hints[h["mistake"]] for h in shown)
        firsts += shown[0]["mistake"] in own
        checked.append(case.id)
    assert checked, f"{slug}: no golden case names a known mistake"
    # Most cases make one mistake, and then it is the one whose hint comes first.
    assert firsts * 2 > len(checked), f"{slug}: own hint first in only {firsts} of {len(checked)} cases"

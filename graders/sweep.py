"""`kvprep sweep [--seeds N] [--challenge SLUG ...] [--jobs J]`: every named mistake, on every seed.

A battery draws fresh sizes and values on every run, so a wrong submission that fails on the
seed a test happened to use may pass on another (greedy tokens that agree by chance, two config
fields that happen to be equal). The sweep grades each golden case that must fail
(tests/graders/cases/<slug>/*.py with `# expect: failed`, and each challenge's starter) with the
battery's own `run(session, seed)` for seeds 0 .. N-1, in-process (the checks' logic; the
sandbox adds isolation, not different numbers), and reports every case that passed on any seed.
It also counts the seeds on which the feedback lacked the case's `# diagnosis:` phrases: a
mistake that fails but is not named is reported, not counted as passing.

Exit status: 0 when every case failed on every seed, 1 otherwise, 2 for a usage error.
CI runs a fixed handful of seeds (tests/graders/test_sweep.py); the full 200 runs before a
change to a battery is called done.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CASES = ROOT / "tests" / "graders" / "cases"
CHALLENGES = ROOT / "questions" / "challenges"
DEFAULT_SEEDS = 200


@dataclass(frozen=True)
class SweepCase:
    slug: str
    path: Path
    phrases: tuple[str, ...] = ()
    must_pass: bool = False  # a right answer (a case with `# expect: passed`, or the worked solution)

    @property
    def id(self) -> str:
        return f"{self.slug}/{self.path.stem}"


@dataclass
class Outcome:
    case: SweepCase
    seeds: int
    passed_on: list[int] = field(default_factory=list)  # seeds where the mistake passed: a battery hole
    failed_on: list[int] = field(default_factory=list)  # seeds where a right answer failed: a flaky test
    unnamed_on: list[int] = field(default_factory=list)  # seeds where it failed without its phrases
    crashed: str | None = None  # the battery itself raised (a bug in the grader, never the submission's)


def failing_cases(slugs: list[str] | None = None, with_passing: bool = False) -> list[SweepCase]:
    """Every golden case that must fail (case files with `# expect: failed`, then the starters);
    with_passing, also those that must pass (`# expect: passed`, the worked solutions)."""
    from graders.checks import CHALLENGE_MODULES

    wanted = sorted(CHALLENGE_MODULES) if not slugs else slugs
    found: list[SweepCase] = []
    for slug in wanted:
        for path in sorted((CASES / slug).glob("*.py")):
            text = path.read_text()
            if re.search(r"^# expect: failed\s*$", text, re.M):
                found.append(SweepCase(slug, path, tuple(re.findall(r"^# diagnosis: (.+)$", text, re.M))))
            elif with_passing and re.search(r"^# expect: passed\s*$", text, re.M):
                found.append(SweepCase(slug, path, must_pass=True))
        starter = CHALLENGES / slug / "starter.py"
        if starter.exists():
            found.append(SweepCase(slug, starter))
        if with_passing:
            found.append(SweepCase(slug, CHALLENGES / slug / "solution.py", must_pass=True))
    return found


def grade_in_process(slug: str, path: Path, seed: int) -> Any:
    """The battery's report for the code at `path` on `seed`, graded in this process; None when the
    code cannot load or lacks the entry point (an error verdict on every seed, never a pass)."""
    from graders.checks import load_check
    from graders.sandbox.inprocess import InProcessLink
    from graders.sandbox.protocol import LoadError

    check = load_check(slug)
    try:
        session = InProcessLink(path.read_text(), filename=path.name)
    except LoadError:
        return None
    if not session.has(check.ENTRY_POINT):
        return None
    from graders.checks.remembered import remembering

    with remembering():  # within the sweep's own scope (main), shared by every case on this seed
        return check.run(session, seed=seed)


Grade = Callable[[str, Path, int], Any]


def sweep_case(case: SweepCase, seeds: range, grade: Grade = grade_in_process) -> Outcome:
    """Grade one case on every seed; which seeds it passed on, which lacked its diagnosis.
    `grade` is grade_in_process or one that remembers its reports (the suite's, shared by tests)."""
    outcome = Outcome(case, len(seeds))
    for seed in seeds:
        try:
            report = grade(case.slug, case.path, seed)
        except Exception as exc:  # noqa: BLE001 - the sweep reports a battery that crashed, and goes on
            outcome.crashed = f"seed {seed}: {type(exc).__name__}: {exc}"
            return outcome
        if report is None:
            return outcome
        passed = bool(report.tests) and all(t.passed for t in report.tests)
        if case.must_pass:
            if not passed:
                outcome.failed_on.append(seed)
            continue
        if passed:
            outcome.passed_on.append(seed)
            continue
        feedback = " ".join(report.diagnosis + [t.message for t in report.tests])
        if any(phrase not in feedback for phrase in case.phrases):
            outcome.unnamed_on.append(seed)
    return outcome


def _sweep_one(args: tuple[SweepCase, int, int]) -> Outcome:
    case, start, stop = args
    return sweep_case(case, range(start, stop))


class _Serial:
    """ProcessPoolExecutor's map and context manager, in this process (--jobs 1)."""

    def __enter__(self) -> _Serial:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def map(self, fn: Callable[[Any], Outcome], items: Iterable[Any]) -> Iterator[Outcome]:
        return (fn(item) for item in items)


def format_outcome(o: Outcome) -> str:
    if o.case.must_pass:
        line = f"{o.case.id} (right answer): passes on {o.seeds - len(o.failed_on)}/{o.seeds} seeds"
        if o.failed_on:
            line += f", FAILS on seeds {o.failed_on[:10]}{' ...' if len(o.failed_on) > 10 else ''}"
        return line + (f"; the battery crashed ({o.crashed})" if o.crashed else "")
    failed = o.seeds - len(o.passed_on)
    line = f"{o.case.id}: fails on {failed}/{o.seeds} seeds"
    if o.passed_on:
        line += f", PASSES on seeds {o.passed_on[:10]}{' ...' if len(o.passed_on) > 10 else ''}"
    if o.unnamed_on:
        line += f"; its diagnosis missing on {len(o.unnamed_on)} seeds (first {o.unnamed_on[0]})"
    if o.crashed:
        line += f"; the battery crashed ({o.crashed})"
    return line


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="kvprep sweep", description="Grade every golden mistake on many seeds; list those that pass."
    )
    parser.add_argument("--seeds", type=int, default=DEFAULT_SEEDS, help="seeds 0 .. N-1 (default 200)")
    parser.add_argument(
        "--challenge", action="append", metavar="SLUG", help="only this challenge (repeatable)"
    )
    parser.add_argument("--jobs", type=int, default=1, help="processes (default 1: the cores are shared)")
    parser.add_argument("--verbose", action="store_true", help="a line for every case, not only the holes")
    parser.add_argument(
        "--with-passing",
        action="store_true",
        help="also grade the right answers, which must pass on every seed",
    )
    args = parser.parse_args(argv)
    from graders.checks import CHALLENGE_MODULES
    from graders.checks.remembered import remembering

    unknown = [s for s in args.challenge or [] if s not in CHALLENGE_MODULES]
    if unknown or args.seeds < 1 or args.jobs < 1:
        problem = f"unknown challenge {unknown[0]!r}" if unknown else "--seeds and --jobs must be at least 1"
        print(f"kvprep sweep: {problem}", file=sys.stderr)
        return 2
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    cases = failing_cases(args.challenge, with_passing=args.with_passing)
    started = time.monotonic()
    work = [(case, 0, args.seeds) for case in cases]
    holes = flaky = 0
    outcomes: list[Outcome] = []
    # One scope for the whole run: every golden case of a challenge on a seed draws the same inputs,
    # so its mistakes' variants are computed once while they fit the scope's budget (--jobs > 1:
    # once per verdict, in grade_in_process's scope in the worker).
    with remembering(), ProcessPoolExecutor(args.jobs) if args.jobs > 1 else _Serial() as pool:
        for o in pool.map(_sweep_one, work):  # printed as they come: a full sweep takes minutes
            outcomes.append(o)
            bad = bool(o.passed_on or o.crashed or o.failed_on)
            holes += bad and not o.case.must_pass
            flaky += bad and o.case.must_pass
            if bad or o.unnamed_on or args.verbose:
                print(format_outcome(o), flush=True)
    unnamed = sum(bool(o.unnamed_on) for o in outcomes)
    mistakes = sum(not c.must_pass for c in cases)
    summary = (
        f"{mistakes} golden mistakes x {args.seeds} seeds in {time.monotonic() - started:.0f} s: "
        f"{mistakes - holes} fail on every seed, {holes} pass on some seed (or crash the battery), "
        f"{unnamed} fail without their diagnosis on some seed"
    )
    if args.with_passing:
        summary += f"; {len(cases) - mistakes} right answers, {flaky} failing on some seed"
    print(summary)
    return 1 if holes or flaky else 0

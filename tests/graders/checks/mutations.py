"""The rule every battery keeps (issue 10): a swap of two fields, or an ignored argument, is caught.

A mutation is a (old, new) text edit of the challenge's own worked solution; the mutated
solution must fail the battery. Each battery's test module lists the mutations that
prove its fields are tested with values that differ and its optional arguments with
non-default values.
"""

from __future__ import annotations

from types import ModuleType

from tests.graders.checks.helpers import challenge_dir, passed, run


def mutated_solution(check: ModuleType, edits: list[tuple[str, str]]) -> str:
    code = (challenge_dir(check.SLUG) / "solution.py").read_text()
    for old, new in edits:
        assert old in code, f"the solution no longer contains {old!r}"
        code = code.replace(old, new)
    return code


def assert_mutation_caught(check: ModuleType, edits: list[tuple[str, str]], seeds: range = range(3)) -> None:
    """The mutated solution fails on every one of a few seeds (not by luck of one draw)."""
    code = mutated_solution(check, edits)
    for seed in seeds:
        report, _ = run(check, code, seed=seed)
        assert not passed(report), f"seed {seed}: the mutation {edits} passed"

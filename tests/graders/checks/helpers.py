"""What the battery tests here share: running a battery in-process, and the checks every battery gets."""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import torch
import yaml

from graders.checks import CHALLENGE_MODULES
from graders.checks.report import CheckReport, close
from graders.sandbox.inprocess import InProcessLink

ROOT = Path(__file__).resolve().parents[3]


def challenge_dir(slug: str) -> Path:
    return ROOT / "questions" / "challenges" / slug


def cases_dir(slug: str) -> Path:
    return ROOT / "tests" / "graders" / "cases" / slug


def run(check: ModuleType, code: str, seed: int | None = None) -> tuple[CheckReport, InProcessLink]:
    session = InProcessLink(code)
    return check.run(session, seed=seed), session


def passed(report: CheckReport) -> bool:
    return bool(report.tests) and all(t.passed for t in report.tests)


def assert_interface_matches(check: ModuleType, entry_point: str, prompt_texts: Sequence[str]) -> None:
    """challenge.yaml agrees with the check module, and the prompt names each of prompt_texts."""
    challenge = challenge_dir(check.SLUG)
    meta = yaml.safe_load((challenge / "challenge.yaml").read_text())
    assert CHALLENGE_MODULES[check.SLUG] == check.__name__
    assert meta["slug"] == check.SLUG and meta["entry_point"] == check.ENTRY_POINT == entry_point
    topics = {t["slug"] for t in yaml.safe_load((ROOT / "questions" / "topics.yaml").read_text())}
    assert set(meta["topics"]) <= topics and meta["difficulty"] in {"easy", "medium", "hard"}
    assert len(meta["hints"]) == 3 and meta["title"] and meta["summary"]
    prompt = (challenge / "prompt.md").read_text()
    for text in prompt_texts:
        assert text in prompt


def assert_every_known_mistake_has_a_golden_case(check: ModuleType) -> None:
    phrases = [
        phrase
        for case in cases_dir(check.SLUG).glob("*.py")
        for phrase in re.findall(r"^# diagnosis: (.+)$", case.read_text(), re.M)
    ]
    for mistake in check.KNOWN_MISTAKES:
        assert any(phrase in mistake for phrase in phrases), f"no golden case for {mistake!r}"


def assert_solution_passes_cleanly(check: ModuleType) -> None:
    """The worked solution passes with no diagnosis, three times over (fresh random inputs each run).

    How fast a battery runs is measured by `kvprep bench grader`, against a baseline taken in
    the same run, never by a wall-clock assertion here: a shared machine makes those flaky.
    """
    code = (challenge_dir(check.SLUG) / "solution.py").read_text()
    for _ in range(3):
        report, _ = run(check, code)
        assert passed(report) and not report.diagnosis, report.tests


def seen_per_seed(check: ModuleType, code: str, seed: int = 7) -> list[Any]:
    """The module's SEEN after runs with seeds None, None, seed, seed: fresh inputs unless seeded.

    code must pass and must record what it was given in a module-level list SEEN."""

    def record(s: int | None) -> Any:
        report, session = run(check, code, s)
        assert all(t.passed for t in report.tests), report.tests
        return session.module.SEEN

    # A battery with a small space of dimensions (a few choices each) draws the same inputs twice
    # now and then (about 1 run in 75 for paged-kv-cache): fresh means another unseeded run soon
    # differs, so up to three more are drawn before calling it stuck.
    unseeded = [record(None), record(None)]
    while unseeded[0] == unseeded[-1] and len(unseeded) < 5:
        unseeded.append(record(None))
    assert unseeded[0] != unseeded[-1]
    seeded = [record(seed), record(seed)]
    assert seeded[0] == seeded[1]
    return [unseeded[0], unseeded[-1], *seeded]


def assert_fails_with(check: ModuleType, code: str, phrase: str) -> None:
    """Some test fails, and some test's message says phrase."""
    report, _ = run(check, code)
    assert report.tests and not all(t.passed for t in report.tests)
    assert any(phrase in t.message for t in report.tests), [t.message for t in report.tests]


def assert_fails_with_messages(check: ModuleType, code: str, seed: int = 1) -> None:
    """Some test fails, and every failed test says why (an odd submission fails, it does not crash)."""
    report, _ = run(check, code, seed=seed)
    assert not passed(report)
    assert all(t.message for t in report.tests if not t.passed)


def attention_inputs(B: int, T: int, d: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """x (B, T, d), w_qkv (d, 3d) and w_o (d, d) in float64, the same for the same shapes."""
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(B, T, d, generator=gen, dtype=torch.float64)
    w_qkv = torch.randn(d, 3 * d, generator=gen, dtype=torch.float64) / d**0.5
    w_o = torch.randn(d, d, generator=gen, dtype=torch.float64) / d**0.5
    return x, w_qkv, w_o


def assert_wrong_and_distinct(variants: Sequence[tuple[Any, torch.Tensor]], right: torch.Tensor) -> None:
    """Every (mistakes, output) variant differs from the right output and from every other variant."""
    for mistakes, wrong in variants:
        assert not close(wrong, right), mistakes
    for (a, wrong_a), (b, wrong_b) in itertools.combinations(variants, 2):
        assert not close(wrong_a, wrong_b), (a, b)


def drawn_by_the_mock(topic: str, draws: int = 30) -> set[str]:
    """The challenges a mock interview on `topic` draws over seeds 0 .. draws - 1, for someone who
    has passed none: a new challenge's topics must let the mock reach it."""
    import random

    from app.content.catalog import load_catalog
    from app.services.mock.plan import choose_challenge

    catalog = load_catalog(ROOT / "questions")
    chosen = (
        choose_challenge(
            catalog=catalog,
            passed=set(),
            topics=[topic],
            difficulty=None,
            topic_weight={},
            rng=random.Random(seed),
        )
        for seed in range(draws)
    )
    return {c.slug for c in chosen if c}

"""Hints that answer the mistake: every known mistake of every battery has a hint in its challenge.yaml,
and each golden mistake case's failed verdict carries the hint of its own mistake first.

The golden cases run in-process (graders.sandbox.inprocess), as tests/graders/test_golden_cases.py
does: this checks which mistake the battery names and which hint follows, not the sandbox.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from app.content.challenges import ChallengeMeta
from app.services.mistake_hints import hint_problems, with_mistake_hints
from graders.checks import CHALLENGE_MODULES, load_check
from graders.mistakes import mistakes_in, named_mistakes
from graders.sandbox.inprocess import InProcessLink
from tests.graders.golden import CHALLENGES, Case, golden_cases


def hints_of(slug: str) -> dict[str, str]:
    meta = ChallengeMeta.model_validate(yaml.safe_load((CHALLENGES / slug / "challenge.yaml").read_text()))
    return dict(meta.mistake_hints)


@pytest.mark.parametrize("slug", sorted(CHALLENGE_MODULES))
def test_every_named_mistake_has_a_hint(slug: str) -> None:
    """A challenge added to the registry gets this test too: its battery must list its sentences
    (KNOWN_MISTAKES or NAMED_MISTAKES) and its challenge.yaml must write a hint for each."""
    assert named_mistakes(slug), f"{slug}: its check module names no known mistake"
    assert hint_problems(slug, hints_of(slug)) == []


def test_a_missing_or_unknown_hint_is_reported() -> None:
    hints = hints_of("tiled-attention")
    del hints["NO_RESCALE"]
    hints["NO_RESCALING"] = "a typo'd id"
    problems = hint_problems("tiled-attention", hints)
    assert len(problems) == 2
    assert "no hint for the mistake NO_RESCALE" in problems[0] and "NO_RESCALING" in problems[1]


def test_a_diagnosis_line_with_figures_after_the_sentence_names_its_mistake() -> None:
    sentence = named_mistakes("tiled-attention")["NO_RESCALE"]
    assert mistakes_in("tiled-attention", ["something else", sentence + " (by up to 0.3)", sentence]) == [
        "NO_RESCALE"
    ]


def test_a_verdict_that_names_no_mistake_gets_no_mistake_hint() -> None:
    hints = hints_of("decode-step")
    failed = {"challenge": "decode-step", "verdict": "failed", "tests": [], "diagnosis": ["not a known one"]}
    assert "mistake_hints" not in with_mistake_hints(failed, hints)
    sentence = named_mistakes("decode-step")["NOT_APPENDED"]
    passed = {"challenge": "decode-step", "verdict": "passed", "tests": [], "diagnosis": [sentence]}
    assert "mistake_hints" not in with_mistake_hints(passed, hints)


def own_mistakes(case: Case) -> set[str]:
    """The ids whose sentence holds one of the case's `# diagnosis:` phrases (none for a case whose
    phrase is in a test's message only, such as 'your code raised NotImplementedError')."""
    _, phrases = case.expected()
    return {m for m, sentence in named_mistakes(case.slug).items() if any(p in sentence for p in phrases)}


@pytest.mark.parametrize("slug", sorted(CHALLENGE_MODULES))
def test_each_golden_mistake_shows_its_own_hint(slug: str) -> None:
    check, hints = load_check(slug), hints_of(slug)
    checked: list[str] = []
    firsts = 0
    for case in golden_cases():
        expect, _ = case.expected()
        own = own_mistakes(case) if case.slug == slug and expect == "failed" else set()
        if not own or case.outside_only:
            continue
        session = InProcessLink(case.path.read_text(), filename=case.path.name)
        report = check.run(session, seed=0)  # a seed of the sweep (kvprep sweep names every mistake on 0-199)
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


def test_the_hint_ids_are_constants_of_the_battery() -> None:
    """An id is the name of the constant holding the sentence, so rewording a sentence keeps its hint."""
    module = load_check("tiled-attention")
    assert named_mistakes("tiled-attention")["NO_RESCALE"] == module.NO_RESCALE
    assert Path(module.__file__ or "").name == "tiled_attention.py"


def test_a_battery_mistake_without_an_id_leaves_the_verdict_as_it_was(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A hint lookup that fails must never turn a verdict into the grader's own error."""
    module = load_check("decode-step")
    named_mistakes.cache_clear()
    monkeypatch.setattr(module, "KNOWN_MISTAKES", (*module.KNOWN_MISTAKES, "a sentence no constant holds"))
    failed = {
        "challenge": "decode-step",
        "verdict": "failed",
        "tests": [],
        "diagnosis": [module.NOT_APPENDED],
    }
    try:
        assert with_mistake_hints(failed, hints_of("decode-step")) == failed
    finally:
        named_mistakes.cache_clear()

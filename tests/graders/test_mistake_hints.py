"""Hints that answer the mistake: every known mistake of every battery has a hint in its challenge.yaml,
and each golden mistake case's failed verdict carries the hint of its own mistake first (that test
lives in tests/graders/test_sweep.py, which grades every golden case on seed 0 anyway).

The golden cases run in-process (graders.sandbox.inprocess), as tests/graders/test_sweep.py
does: this checks which mistake the battery names and which hint follows, not the sandbox.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from app.services.mistake_hints import hint_problems, with_mistake_hints
from graders.checks import CHALLENGE_MODULES, decode_step_mistakes, load_check, tiled_attention_mistakes
from graders.mistakes import mistakes_in, named_mistakes
from tests.graders.golden import hints_of


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


def test_the_hint_ids_are_constants_of_the_battery() -> None:
    """An id is the name of the constant holding the sentence, so rewording a sentence keeps its hint;
    a battery split in two holds its sentences in its *_mistakes module, which it is built from."""
    module = load_check("tiled-attention")
    assert Path(module.__file__ or "").name == "tiled_attention.py"
    assert named_mistakes("tiled-attention")["NO_RESCALE"] == tiled_attention_mistakes.NO_RESCALE
    assert tiled_attention_mistakes.NO_RESCALE in module.KNOWN_MISTAKES


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
        "diagnosis": [decode_step_mistakes.NOT_APPENDED],
    }
    try:
        assert with_mistake_hints(failed, hints_of("decode-step")) == failed
    finally:
        named_mistakes.cache_clear()


def test_a_mistakes_id_does_not_depend_on_what_else_was_graded() -> None:
    """Each battery's ids, worked out in a process that loaded only that battery, are those of a
    process that loaded every battery: the web app's process loads what it happened to grade."""
    script = (
        "import json, sys\n"
        "import graders.checks as gc\n"
        "from graders.mistakes import named_mistakes\n"
        "asked, load = sys.argv[1].split(','), sys.argv[2:]\n"
        "[gc.load_check(s) for s in load]\n"
        "print(json.dumps({s: sorted(named_mistakes(s)) for s in asked}))\n"
    )

    def ids(asked: list[str], load: list[str]) -> dict[str, list[str]]:
        command = [sys.executable, "-c", script, ",".join(asked), *load]
        return json.loads(subprocess.run(command, capture_output=True, text=True, check=True).stdout)

    # Two batteries that hold one sentence under two names, and two that borrow from others.
    slugs = ["paged-kv-cache", "kv-cache-buffer", "sampling", "decode-step"]
    after_everything = ids(slugs, sorted(CHALLENGE_MODULES))
    for slug in slugs:
        assert ids([slug], [])[slug] == after_everything[slug], slug

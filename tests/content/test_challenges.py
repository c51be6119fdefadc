"""Challenges are validated like cards: every problem names its file and field."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from app.content.challenges import load_challenges
from app.content.loader import ContentError


@pytest.fixture
def root(tmp_path: Path, bank_root: Path) -> Path:
    shutil.copytree(bank_root / "challenges", tmp_path / "challenges")
    return tmp_path


def test_the_challenges_load_in_registry_order(bank_root: Path) -> None:
    from graders.checks import CHALLENGE_MODULES

    challenges = load_challenges(bank_root)
    assert [c.slug for c in challenges][:6] == [
        "fix-causal-attention",
        "decode-step",
        "gqa-attention",
        "kv-cache-buffer",
        "kv-cache-bytes",
        "numpy-cached-generation",
    ]
    assert [c.slug for c in challenges] == list(CHALLENGE_MODULES)  # every grader has its challenge
    for c in challenges:
        assert c.prompt.strip() and c.starter.strip() and c.solution.strip() and c.meta.hints


def test_missing_file_is_named(root: Path) -> None:
    (root / "challenges" / "decode-step" / "prompt.md").unlink()
    with pytest.raises(ContentError, match="challenges/decode-step/prompt.md: file"):
        load_challenges(root)


def test_bad_field_is_named(root: Path) -> None:
    meta = root / "challenges" / "gqa-attention" / "challenge.yaml"
    meta.write_text(meta.read_text().replace("difficulty:", "difficulty: impossible\nold_difficulty:"))
    with pytest.raises(ContentError, match="challenges/gqa-attention/challenge.yaml: difficulty"):
        load_challenges(root)


def test_unknown_topic_and_unknown_grader_are_named(root: Path) -> None:
    shutil.copytree(root / "challenges" / "decode-step", root / "challenges" / "decode-twice")
    meta = root / "challenges" / "decode-twice" / "challenge.yaml"
    meta.write_text(meta.read_text().replace("slug: decode-step", "slug: decode-twice"))
    with pytest.raises(ContentError, match="decode-twice/challenge.yaml: slug: no grader"):
        load_challenges(root, known_topics={"context-window"})

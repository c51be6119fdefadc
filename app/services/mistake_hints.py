"""The hint for the mistake a failed verdict names, put first among the hints a person is shown.

A battery names a known mistake by its sentence in the verdict's `diagnosis`; graders/mistakes.py
gives every such sentence a stable id (its constant's name, e.g. tiled-attention's NO_RESCALE), and
each challenge writes one hint per id in challenge.yaml (`mistake_hints`). The hints are looked up by
id, never by the sentence's wording, and added to the stored verdict as `mistake_hints` (CONTRACT.md
lets a verdict carry more keys; the CLI's `kvprep grade --json` stays as it was). A verdict that
names no mistake gets none: the page falls back on the challenge's generic hints.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from graders.mistakes import mistakes_in, named_mistakes
from graders.verdict import Verdict

log = logging.getLogger("kvprep.grading")


def hints_for(slug: str, diagnosis: list[str], hints: Mapping[str, str]) -> list[dict[str, str]]:
    """[{"mistake": id, "hint": text}] for each named mistake of the diagnosis with a hint, in its order."""
    return [{"mistake": m, "hint": hints[m]} for m in mistakes_in(slug, diagnosis) if m in hints]


def with_mistake_hints(result: dict[str, Any], hints: Mapping[str, str]) -> dict[str, Any]:
    """The verdict JSON, with `mistake_hints` when it failed naming a known mistake that has a hint."""
    if result.get("verdict") != Verdict.FAILED:
        return result
    try:
        found = hints_for(result["challenge"], list(result.get("diagnosis") or ()), hints)
    except LookupError:  # a battery whose mistake has no id: the verdict stands, without hints
        log.exception("no mistake ids for %s; its verdict goes out without hints", result["challenge"])
        return result
    return {**result, "mistake_hints": found} if found else result


def hint_problems(slug: str, hints: Mapping[str, str]) -> list[str]:
    """What is wrong with a challenge's `mistake_hints`: a named mistake without a hint (a new one the
    battery gained), or a hint for an id the battery does not name (a typo, or a renamed constant)."""
    named = named_mistakes(slug)
    problems = [
        f"{slug}: no hint for the mistake {m} ({named[m]!r})" for m in named if not hints.get(m, "").strip()
    ]
    problems += [f"{slug}: a hint for {m}, which the battery does not name" for m in hints if m not in named]
    return problems

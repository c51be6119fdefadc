"""The known mistakes a challenge's battery can name, each with a stable id.

A battery names a mistake by adding its sentence to the verdict's `diagnosis` (CheckReport.diagnose),
and that sentence is a module-level constant: `NO_RESCALE = "the running output and ..."` in
graders/checks/tiled_attention.py. The constant's name is the mistake's id: the sentence's wording
may be reworded freely, the id stays, and whatever is keyed by it (the hint written for each mistake
in questions/challenges/<slug>/challenge.yaml, `mistake_hints`) follows.

Each check module lists its sentences in `KNOWN_MISTAKES`; one whose sentences are computed rather
than constants (continuous-batching: one per `Slip`) maps ids to sentences itself in `NAMED_MISTAKES`.

    named_mistakes(slug) -> {id: sentence}
    mistakes_in(slug, diagnosis) -> [id, ...]   the ids a verdict's diagnosis names, in its order
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from functools import cache
from types import ModuleType

from graders.checks import load_check


class UnnamedMistake(LookupError):
    """A sentence in KNOWN_MISTAKES that no module-level constant holds: it has no id."""


def _constants(module: ModuleType) -> dict[str, str]:
    """sentence -> the name of the upper-case string constant holding it (first name wins)."""
    found: dict[str, str] = {}
    for name, value in vars(module).items():
        if name.isupper() and isinstance(value, str):
            found.setdefault(value, name)
    return found


def _built_from(check: ModuleType) -> list[ModuleType]:
    """The check module and the graders.checks modules it reaches through what it imported
    (modules, and the modules of its functions and classes), breadth first, in import order."""
    reached, queue = [check], [check]
    while queue:
        for value in list(vars(queue.pop(0)).values()):
            name = value.__name__ if isinstance(value, ModuleType) else getattr(value, "__module__", None)
            module = (
                sys.modules.get(name)
                if isinstance(name, str) and name.startswith("graders.checks.")
                else None
            )
            if module is not None and module not in reached:
                reached.append(module)
                queue.append(module)
    return reached


@cache
def named_mistakes(slug: str) -> dict[str, str]:
    """id -> sentence for every mistake the challenge's battery can name. KeyError for an unknown slug;
    UnnamedMistake for a known sentence that has no constant (so no id to key a hint by)."""
    check = load_check(slug)
    explicit = getattr(check, "NAMED_MISTAKES", None)
    if explicit is not None:
        return dict(explicit)
    # The check module's own names first, then those of the graders.checks modules it was built from
    # (paged_kv_driver, sampling_variants, attention_common, ...), nearest first: a sentence is
    # imported by name. Only as a last resort any other loaded check module: which of those are
    # loaded depends on what this process graded before, and two batteries may hold one sentence
    # under two names (kv-cache-buffer's SWAPPED is paged-kv-cache's KV_SWAPPED).
    names: dict[str, str] = {}
    built_from = _built_from(check)
    others = [sys.modules[n] for n in sorted(sys.modules) if n.startswith("graders.checks.")]
    for module in [*built_from, *(m for m in others if m not in built_from)]:
        for sentence, name in _constants(module).items():
            names.setdefault(sentence, name)
    mistakes: dict[str, str] = {}
    # A battery that lists none names none (tests/graders/test_mistake_hints.py fails for it).
    for sentence in getattr(check, "KNOWN_MISTAKES", ()):
        if sentence not in names:
            raise UnnamedMistake(f"{slug}: no constant holds the known mistake {sentence!r}")
        mistakes[names[sentence]] = sentence
    return mistakes


def mistake_of(slug: str, line: str) -> str | None:
    """The id of the mistake one diagnosis line names: the line is its sentence, or starts with it
    (a battery may add the figures it measured); the longest sentence wins. None for another line."""
    best: tuple[int, str] | None = None
    for mistake, sentence in named_mistakes(slug).items():
        if line == sentence or line.startswith(sentence):
            if best is None or len(sentence) > best[0]:
                best = (len(sentence), mistake)
    return best[1] if best else None


def mistakes_in(slug: str, diagnosis: Sequence[str]) -> list[str]:
    """The ids of the known mistakes a verdict's diagnosis names, in its order, each once."""
    found: list[str] = []
    for line in diagnosis:
        mistake = mistake_of(slug, line)
        if mistake is not None and mistake not in found:
            found.append(mistake)
    return found

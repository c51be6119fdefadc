"""Coding challenges: questions/challenges/<slug>/ with challenge.yaml, prompt.md, starter.py, solution.py.

Like cards, challenges are validated on load and every problem names its file and field.
The grading battery of each challenge lives in graders/checks/.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from app.content.loader import ContentError, Problem
from app.content.schema import SLUG
from app.content.yaml_text import load_yaml
from app.enums import Difficulty

FILES = ("challenge.yaml", "prompt.md", "starter.py", "solution.py")


class ChallengeMeta(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    slug: str = Field(pattern=SLUG)
    title: str = Field(min_length=1, max_length=200)
    entry_point: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    difficulty: Difficulty
    # Topics whose cards this challenge exercises (spaced repetition and "what to review").
    topics: list[str] = Field(min_length=1)
    summary: str = Field(min_length=1)
    # Generic hints, shown one at a time on request.
    hints: list[str] = Field(min_length=1)
    # The hint for each known mistake the battery can name, keyed by its id (graders/mistakes.py: the
    # constant's name, e.g. NO_RESCALE): shown first after a failed verdict that names it.
    mistake_hints: dict[str, str] = Field(default_factory=dict)


@dataclass(frozen=True)
class Challenge:
    meta: ChallengeMeta
    prompt: str
    starter: str
    solution: str

    @property
    def slug(self) -> str:
        return self.meta.slug

    @property
    def prompt_body(self) -> str:
        """The prompt without a leading '# Title' line: pages show the title themselves."""
        first, _, rest = self.prompt.lstrip().partition("\n")
        return rest.lstrip() if first.startswith("# ") else self.prompt


def load_challenges(root: Path, known_topics: set[str] | None = None) -> list[Challenge]:
    """Every challenge under root/challenges, in the order of the grader's registry."""
    from graders.checks import CHALLENGE_MODULES

    problems: list[Problem] = []
    found: dict[str, Challenge] = {}
    folders = (root / "challenges").iterdir() if (root / "challenges").is_dir() else iter(())
    for folder in sorted(p for p in folders if p.is_dir()):
        rel = folder.relative_to(root).as_posix()
        texts: dict[str, str] = {}
        for name in FILES:
            try:
                texts[name] = (folder / name).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                problems.append(Problem(f"{rel}/{name}", "file", f"missing or unreadable: {exc}"))
        if len(texts) < len(FILES):
            continue
        try:
            meta = ChallengeMeta.model_validate(load_yaml(texts["challenge.yaml"]))
        except yaml.YAMLError as exc:
            problems.append(Problem(f"{rel}/challenge.yaml", "file", f"malformed YAML: {exc}"))
            continue
        except ValidationError as exc:
            for err in exc.errors():
                field = ".".join(map(str, err["loc"])) or "file"
                problems.append(Problem(f"{rel}/challenge.yaml", field, err["msg"]))
            continue
        if meta.slug != folder.name:
            problems.append(
                Problem(f"{rel}/challenge.yaml", "slug", f"must equal the folder name {folder.name!r}")
            )
        if meta.slug not in CHALLENGE_MODULES:
            problems.append(Problem(f"{rel}/challenge.yaml", "slug", "no grader in graders/checks for it"))
        for topic in meta.topics:
            if known_topics is not None and topic not in known_topics:
                problems.append(Problem(f"{rel}/challenge.yaml", "topics", f"unknown topic {topic!r}"))
        found[meta.slug] = Challenge(meta, texts["prompt.md"], texts["starter.py"], texts["solution.py"])
    if problems:
        raise ContentError(problems)
    return [found[slug] for slug in CHALLENGE_MODULES if slug in found]

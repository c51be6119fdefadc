"""Load and validate the question bank: every problem is reported with its file and field.

A card is a Markdown file with YAML front matter (see questions/README.md):

    ---
    id: what-the-cache-stores
    title: ...
    topic: kv-cache-contents
    difficulty: easy
    tags: [kv-cache]
    sources: ["Vaswani et al., 2017, Attention Is All You Need"]
    ---
    ## Question
    ## Key points        (a bullet list, three or more)
    ## Follow-ups        (each "### question", then {probes: [0, 2], difficulty: same|harder},
                          then its answer)
    ## Common wrong answers   (each "### wrong answer", why it is wrong below)
    ## Notes             (optional)

Loading is all or nothing: `load_bank` either returns every card or raises
`ContentError` listing every problem it found.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import yaml
from pydantic import ValidationError

from app.content.schema import Card, CardFrontMatter, FollowUp, FollowUpMeta, Topic, WrongAnswer
from app.content.yaml_text import load_yaml

REQUIRED_SECTIONS = ("Question", "Key points", "Follow-ups", "Common wrong answers")
OPTIONAL_SECTIONS = ("Notes",)
_FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.*?)\n---[ \t]*\n(.*)\Z", re.S)


@dataclass(frozen=True)
class Problem:
    path: str
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.field}: {self.message}"


class ContentError(Exception):
    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        lines = "\n".join(f"  {p}" for p in problems)
        super().__init__(f"the question bank has {len(problems)} problem(s):\n{lines}")


@dataclass(frozen=True)
class Bank:
    topics: list[Topic]
    cards: list[Card]

    def topic(self, slug: str) -> Topic | None:
        return next((t for t in self.topics if t.slug == slug), None)

    @property
    def live_cards(self) -> list[Card]:
        """The cards users are asked: all but those retired in favour of another card."""
        return [c for c in self.cards if c.superseded_by is None]


def _split_sections(body: str) -> dict[str, str]:
    sections: dict[str, str] = {}
    current: str | None = None
    lines: list[str] = []
    for line in body.splitlines():
        heading = re.match(r"^##\s+(.+?)\s*$", line)
        if heading and not line.startswith("###"):
            if current is not None:
                sections[current] = "\n".join(lines).strip()
            current, lines = heading.group(1), []
            if current in sections:
                raise ValueError(f"section '## {current}' appears twice")
        elif current is not None:
            lines.append(line)
        elif line.strip():
            raise ValueError("text before the first '## ' section heading")
    if current is not None:
        sections[current] = "\n".join(lines).strip()
    return sections


def _bullets(text: str) -> list[str]:
    """Top-level '- ' or '* ' items; indented lines continue the item before them."""
    items: list[str] = []
    for line in text.splitlines():
        if re.match(r"^[-*]\s+", line):
            items.append(re.sub(r"^[-*]\s+", "", line).strip())
        elif line.strip() and items and line[:1].isspace():
            items[-1] += " " + line.strip()
        elif line.strip():
            raise ValueError(f"expected a bullet item ('- ...'), found {line.strip()[:60]!r}")
    return items


def _subsections(text: str) -> list[tuple[str, str]]:
    """'### heading' blocks with the text under each."""
    pairs: list[tuple[str, str]] = []
    for line in text.splitlines():
        heading = re.match(r"^###\s+(.+?)\s*$", line)
        if heading:
            pairs.append((heading.group(1), ""))
        elif pairs:
            pairs[-1] = (pairs[-1][0], pairs[-1][1] + line + "\n")
        elif line.strip():
            raise ValueError("text before the first '### ' heading")
    return [(head, body.strip()) for head, body in pairs]


_META_HINT = "the line under a follow-up's heading must be {probes: [0, 2], difficulty: same} (or harder)"


def _follow_ups(pairs: list[tuple[str, str]], rel_path: str, problems: list[Problem]) -> list[FollowUp]:
    """Each follow-up's first line is its `{probes: [...], difficulty: ...}`; the rest is its answer.

    A problem is named by the follow-up's number and the start of its question."""
    follow_ups: list[FollowUp] = []
    for i, (question, body) in enumerate(pairs, start=1):
        where = f"## Follow-ups {i} ({question[:50]!r})"
        first, _, rest = body.partition("\n")
        try:
            meta = load_yaml(first) if first.lstrip().startswith("{") else None
        except yaml.YAMLError:
            meta = None
        if not isinstance(meta, dict):
            problems.append(Problem(rel_path, where, _META_HINT))
            continue
        try:
            checked = FollowUpMeta.model_validate(meta)
            follow_up = FollowUp(question=question, answer=rest.strip(), **checked.model_dump())
        except ValidationError as exc:
            for err in exc.errors():
                problems.append(Problem(rel_path, f"{where}.{_field_name(err['loc'])}", err["msg"]))
            continue
        follow_ups.append(follow_up)
    return follow_ups


def _probe_problems(follow_ups: list[FollowUp], n_points: int, rel_path: str) -> list[Problem]:
    """A probe must index one of the card's key points."""
    problems = []
    for i, follow_up in enumerate(follow_ups, start=1):
        outside = [p for p in follow_up.probes if p >= n_points]
        if outside:
            where = f"## Follow-ups {i} ({follow_up.question[:50]!r}).probes"
            message = f"key point {outside[0]} is out of range: the card has {n_points} key points"
            problems.append(Problem(rel_path, where, f"{message} (0 to {n_points - 1})"))
    return problems


def _field_name(loc: tuple[object, ...]) -> str:
    return ".".join(str(part) for part in loc) or "card"


def parse_card(text: str, rel_path: str) -> tuple[Card | None, list[Problem]]:
    """Parse one card file. Returns the card, or None and the problems found."""
    problems: list[Problem] = []

    def problem(field: str, message: str) -> tuple[None, list[Problem]]:
        problems.append(Problem(rel_path, field, message))
        return None, problems

    match = _FRONT_MATTER.match(text.replace("\r\n", "\n"))
    if not match:
        return problem("front matter", "the file must start with a '---' YAML block closed by '---'")
    try:
        meta = load_yaml(match.group(1))
    except yaml.YAMLError as exc:
        return problem("front matter", f"malformed YAML: {str(exc).splitlines()[0]}")
    if not isinstance(meta, dict):
        return problem("front matter", "must be a YAML mapping of field: value")
    try:
        front = CardFrontMatter.model_validate(meta)
    except ValidationError as exc:
        for err in exc.errors():
            problems.append(Problem(rel_path, _field_name(err["loc"]), err["msg"]))
        front = None

    try:
        sections = _split_sections(match.group(2))
    except ValueError as exc:
        return problem("body", str(exc))
    for name in REQUIRED_SECTIONS:
        if not sections.get(name):
            problems.append(Problem(rel_path, f"## {name}", "missing or empty section"))
    for name in sections:
        if name not in REQUIRED_SECTIONS + OPTIONAL_SECTIONS:
            problems.append(Problem(rel_path, f"## {name}", "unknown section"))
    if problems or front is None:
        return None, problems

    try:
        key_points = _bullets(sections["Key points"])
    except ValueError as exc:
        return problem("## Key points", str(exc))
    try:
        pairs = _subsections(sections["Follow-ups"])
        wrongs = [WrongAnswer(answer=w, why=why) for w, why in _subsections(sections["Common wrong answers"])]
        if any(not a for _, a in pairs):
            raise ValueError("a heading has no text under it")
    except (ValueError, ValidationError) as exc:
        return problem("body", f"a follow-up or wrong answer is incomplete: {exc}".splitlines()[0])
    follow_ups = _follow_ups(pairs, rel_path, problems)
    if problems:
        return None, problems
    card: Card | None = None
    try:
        card = Card(
            **front.model_dump(),
            question=sections["Question"],
            key_points=key_points,
            follow_ups=follow_ups,
            wrong_answers=wrongs,
            notes=sections.get("Notes", ""),
            path=rel_path,
        )
    except ValidationError as exc:
        section_of = {
            "key_points": "## Key points",
            "follow_ups": "## Follow-ups",
            "wrong_answers": "## Common wrong answers",
        }
        for err in exc.errors():
            name = str(err["loc"][0]) if err["loc"] else "card"
            problems.append(Problem(rel_path, section_of.get(name, name), err["msg"]))
    problems += _probe_problems(follow_ups, len(key_points), rel_path)
    return (None if problems else card), problems


def load_topics(root: Path) -> tuple[list[Topic], list[Problem]]:
    path = root / "topics.yaml"
    try:
        raw = load_yaml(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        return [], [Problem("topics.yaml", "file", str(exc).splitlines()[0])]
    if not isinstance(raw, list):
        return [], [Problem("topics.yaml", "file", "must be a YAML list of topics")]
    topics: list[Topic] = []
    problems: list[Problem] = []
    for i, item in enumerate(raw):
        try:
            topics.append(Topic.model_validate(item))
        except ValidationError as exc:
            for err in exc.errors():
                problems.append(Problem("topics.yaml", f"[{i}].{_field_name(err['loc'])}", err["msg"]))
    return topics, problems


def _supersession_problems(cards: list[Card]) -> list[Problem]:
    """A retired card must name a live card: not itself, not a missing id, not another retired card."""
    by_id = {c.id: c for c in cards}
    problems: list[Problem] = []
    for card in cards:
        target = card.superseded_by
        if target is None:
            continue
        if target == card.id:
            problems.append(Problem(card.path, "superseded_by", "a card cannot supersede itself"))
        elif target not in by_id:
            problems.append(Problem(card.path, "superseded_by", f"no card has the id {target!r}"))
        elif by_id[target].superseded_by is not None:
            problems.append(
                Problem(
                    card.path, "superseded_by", f"{target!r} is retired too: name the live card it points to"
                )
            )
    return problems


def load_bank(root: Path) -> Bank:
    """Load topics and every `cards/**/*.md` under root; raise ContentError on any problem."""
    topics, problems = load_topics(root)
    known = {t.slug for t in topics}
    cards: list[Card] = []
    seen: dict[str, str] = {}
    for file in sorted((root / "cards").rglob("*.md")):
        rel = file.relative_to(root).as_posix()
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            problems.append(Problem(rel, "file", f"cannot be read as UTF-8 text: {exc}"))
            continue
        card, found = parse_card(text, rel)
        problems += found
        if card is None:
            continue
        folders = file.relative_to(root / "cards").parts[:-1]
        if card.topic not in known:
            problems.append(Problem(rel, "topic", f"unknown topic {card.topic!r} (see topics.yaml)"))
        elif folders != (card.topic,):
            # The folder is where authors and reviewers look for a topic's cards: they must agree.
            where = f"the folder cards/{'/'.join(folders)}/" if folders else "no topic folder"
            problems.append(
                Problem(
                    rel,
                    "topic",
                    f"{card.topic!r} does not match {where}: move the file to cards/{card.topic}/ "
                    "or correct the topic",
                )
            )
        if card.id in seen:
            problems.append(Problem(rel, "id", f"duplicate id {card.id!r}, also used by {seen[card.id]}"))
        seen.setdefault(card.id, rel)
        cards.append(card)
    problems += _supersession_problems(cards)
    if not cards and not problems:
        problems.append(Problem("cards", "file", "the bank has no cards"))
    if problems:
        raise ContentError(problems)
    return Bank(topics=topics, cards=cards)

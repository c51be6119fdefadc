"""Write a first `{probes: [...], difficulty: ...}` line under every follow-up that lacks one.

Run once over the bank when the follow-up format gained the line (issue 26); an author then
checks the result by hand and corrects it in the card file, which is where it lives from then
on. A follow-up that already has its line is left alone, so running it again changes nothing.

The first guess comes from the key-point matcher (app/services/key_point_matcher.py): the
follow-up's question and answer, read as if they were an answer, are scored against each key
point. The follow-up probes the best-scoring point and every other point that reaches the
matcher's threshold (at most three, best first, then written in key-point order). A follow-up
that reaches the threshold on some point restates it at the card's level (`same`); one that
reaches none goes past the key points (`harder`).

    .venv/bin/python scripts/assign_follow_up_probes.py [--root questions] [--dry-run]
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from app.content.loader import _FRONT_MATTER, _bullets, _split_sections
from app.services.key_point_matcher import LEXICAL_THRESHOLD, SEMANTIC_THRESHOLD, Method, get_matcher

MAX_PROBES = 3
_HEADING = re.compile(r"^###\s+(.+?)\s*$")


def first_guess(question: str, answer: str, key_points: list[str]) -> tuple[list[int], str]:
    suggestion = get_matcher().suggest(f"{question}\n{answer}", key_points)
    threshold = SEMANTIC_THRESHOLD["wordllama"] if suggestion.method == Method.semantic else LEXICAL_THRESHOLD
    ranked = sorted(range(len(key_points)), key=lambda i: (-suggestion.scores[i], i))
    chosen = [ranked[0]] + [i for i in ranked[1:MAX_PROBES] if suggestion.scores[i] >= threshold]
    difficulty = "same" if suggestion.scores[ranked[0]] >= threshold else "harder"
    return sorted(chosen), difficulty


def annotate(text: str) -> tuple[str, int]:
    """The card's text with a line added under each follow-up heading that lacks one; how many."""
    match = _FRONT_MATTER.match(text)
    if match is None:
        raise ValueError("no front matter")
    sections = _split_sections(match.group(2))
    key_points = _bullets(sections["Key points"])
    lines = text.split("\n")
    out: list[str] = []
    added = 0
    in_follow_ups = False
    i = 0
    while i < len(lines):
        line = lines[i]
        out.append(line)
        if line.startswith("## "):
            in_follow_ups = line.strip() == "## Follow-ups"
        heading = _HEADING.match(line) if in_follow_ups else None
        if heading:
            j = i + 1
            while j < len(lines) and not lines[j].strip():
                j += 1
            if j < len(lines) and not lines[j].lstrip().startswith("{"):
                body = []
                k = j
                while k < len(lines) and not lines[k].startswith("#"):
                    body.append(lines[k])
                    k += 1
                probes, difficulty = first_guess(heading.group(1), "\n".join(body), key_points)
                out.append(f"{{probes: [{', '.join(map(str, probes))}], difficulty: {difficulty}}}")
                added += 1
        i += 1
    return "\n".join(out), added


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path("questions"))
    parser.add_argument("--dry-run", action="store_true")
    args = parser.parse_args()
    total = 0
    for file in sorted((args.root / "cards").rglob("*.md")):
        text, added = annotate(file.read_text(encoding="utf-8"))
        if added and not args.dry_run:
            file.write_text(text, encoding="utf-8")
        total += added
    print(f"{total} follow-up(s) annotated")


if __name__ == "__main__":
    main()

"""No block of six or more lines is written twice in app/ or graders/: a second copy is a helper
waiting to be named (and the two copies drift apart the day one of them is fixed).

A block is six consecutive code lines (blank lines and comments skipped, whitespace collapsed) of
which at least four say something: signature lines (`def`, `class`, decorators, a parameter per
line, docstrings), imports, closing brackets, one-item lines of a literal and a battery's opening
are the shape every function, table or battery shares, not logic. The exceptions below are
copies on purpose, each with its reason.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

from app.config import ROOT

PACKAGES = ("app", "graders")
SIZE = 6
SAYING = 4  # lines of a block that are more than shape

# Paths (prefixes) whose copies are wanted, and why.
ALLOWED: dict[str, str] = {
    "app/migrations/versions/": "a migration is frozen history: it restates the tables as they were then",
    "graders/checks/continuous_batching_variants.py": (
        "each named mistake is the reference scheduler with one change, copied so that the change reads alone"
    ),
    "graders/checks/beam_search_variants.py": (
        "each named mistake is the reference walk with one change, copied so that the change reads alone"
    ),
    "app/content/figures_2026_systems.py": (
        "the weight-shape table of a dense layer, a declarative table beside numeric_2026_systems.py's own"
    ),
    "app/services/numeric_2026_systems.py": "the other half of the weight-shape table above",
}

# The opening every battery of graders/checks shares, line for line: its report, its seeded
# generator, and (stateful ones) the replayer; written out in each so a battery reads alone.
BATTERY_OPENING = frozenset(
    {
        "report = CheckReport()",
        "rng = Rng(seed)",
        "py = rng.py",
        "check = partial(run_test, report)",
        "replayer = Replayer(report, session)",
    }
)

_SHAPE = re.compile(
    r"""[)\]}]+[,:;]?                 # closing brackets
    | \)\s*->.*:                      # the end of a signature
    | (async\s)?def\s.*|class\s.*     # a signature's first line
    | @.*                             # a decorator
    | (from\s.*\s)?import\s.*         # an import
    | [rbuf]?(\"\"\"|''').*           # a docstring's line
    | \w+:\s[^=]+(=\s.*)?,?           # one parameter (or field) per line
    | \w+=[\w.]+,                     # one keyword argument per line
    | [\w."'-]+,                      # one item of a literal per line
    | pass|else:|try:|return|finally:
    """,
    re.VERBOSE,
)


def _is_shape(text: str) -> bool:
    return text in BATTERY_OPENING or _SHAPE.fullmatch(text) is not None


def code_lines(path: Path) -> list[tuple[int, str]]:
    lines = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        text = line.strip()
        if text and not text.startswith("#"):
            lines.append((number, re.sub(r"\s+", " ", text)))
    return lines


def _allowed(relative: str) -> bool:
    return any(relative.startswith(prefix) for prefix in ALLOWED)


def repeated_blocks(root: Path = ROOT, packages: Iterable[str] = PACKAGES) -> list[list[str]]:
    """Every block written more than once, as the `path:line` of each copy (overlapping blocks of
    one copy reported once, at its first line)."""
    copies: dict[tuple[str, ...], list[tuple[str, int]]] = defaultdict(list)
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            relative = path.relative_to(root).as_posix()
            if _allowed(relative):
                continue
            lines = code_lines(path)
            for start in range(len(lines) - SIZE + 1):
                block = tuple(text for _, text in lines[start : start + SIZE])
                if sum(not _is_shape(text) for text in block) >= SAYING:
                    copies[block].append((relative, lines[start][0]))
    found: list[list[str]] = []
    reported: set[tuple[str, int]] = set()
    for where in sorted((w for w in copies.values() if len(w) > 1), key=lambda w: w[0]):
        if not any((path, line - back) in reported for path, line in where for back in range(1, 40)):
            found.append([f"{path}:{line}" for path, line in where])
        reported.update(where)
    return found


def test_no_block_of_six_lines_is_written_twice() -> None:
    assert repeated_blocks() == []


def test_the_exceptions_are_paths_that_exist() -> None:
    # A stale exception excuses nothing today and hides a copy tomorrow.
    assert all((ROOT / prefix).exists() for prefix in ALLOWED)


def test_the_scan_finds_a_copied_block(tmp_path: Path) -> None:
    body = "\n".join(f"    total = total * {i} + offset_{i}" for i in range(SIZE))
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "a.py").write_text(f"def f(total, offset_0):\n{body}\n    return total\n")
    (tmp_path / "app" / "b.py").write_text(f"# a copy\ndef g(total, offset_0):\n\n{body}\n")
    assert repeated_blocks(tmp_path, ["app"]) == [["app/a.py:2", "app/b.py:4"]]

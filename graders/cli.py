"""`kvprep grade SLUG FILE [--json]`: grade a file in the sandbox, like the web app does.

Exit status: 0 when the verdict is `passed`, 1 for any other verdict, 2 for a usage error
(unknown challenge, unreadable file). With --json, stdout carries exactly one JSON object
(shared/CONTRACT.md); the submission's own output never reaches stdout (a capped excerpt
may appear in the verdict as "output").
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from graders.verdict import Result


class _UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise _UsageError(message)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="kvprep", description="Grade a solution file like the web app does.")
    sub = parser.add_subparsers(dest="command", required=True)
    grade = sub.add_parser("grade", help="grade FILE for challenge SLUG")
    grade.add_argument("slug", metavar="SLUG", help="the challenge, e.g. decode-step")
    grade.add_argument("file", metavar="FILE", help="the Python file to grade")
    grade.add_argument("--json", action="store_true", help="print the verdict as one JSON object")
    return parser


def format_result(result: Result) -> str:
    """A readable per-test summary."""
    lines = [f"{result.challenge}: {result.verdict.value.upper()} ({result.duration_ms} ms)"]
    for test in result.tests:
        mark = "ok  " if test.passed else "FAIL"
        lines.append(f"  {mark} {test.name}")
        if test.message:
            lines.extend(f"         {line}" for line in test.message.splitlines())
    if result.diagnosis:
        lines.append("diagnosis:")
        lines.extend(f"  - {sentence}" for sentence in result.diagnosis)
    if result.output:
        lines.append("your code printed (excerpt):")
        lines.extend(f"  | {line}" for line in result.output.splitlines())
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        args = _parser().parse_args(argv)
    except _UsageError as exc:
        print(f"kvprep grade: {exc}\nusage: kvprep grade SLUG FILE [--json]", file=sys.stderr)
        return 2
    from graders.checks import CHALLENGE_MODULES

    if args.slug not in CHALLENGE_MODULES:
        known = ", ".join(sorted(CHALLENGE_MODULES))
        print(f"kvprep grade: unknown challenge {args.slug!r} (known: {known})", file=sys.stderr)
        return 2
    try:
        code = Path(args.file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        print(f"kvprep grade: cannot read {args.file}: {exc}", file=sys.stderr)
        return 2
    from graders.runner import grade

    try:
        result = grade(args.slug, code)
    except KeyError:
        print(f"kvprep grade: unknown challenge {args.slug!r}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(result.to_json()))
    else:
        print(format_result(result))
    return 0 if result.passed else 1


if __name__ == "__main__":
    sys.exit(main())

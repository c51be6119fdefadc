"""Practice at home, submit from the terminal.

- `kvprep challenges pull SLUG [--dir D] [--server URL] [--force]` writes the challenge's prompt
  (`prompt.md`) and starter code (`starter.py`) into D (default `./SLUG`), from this checkout's
  bank or, with --server, from a running server's API. It never overwrites an edited file
  without --force.
- `kvprep submit SLUG FILE --server URL [--token T] [--json] [--wait S]` sends FILE to a running
  server (POST /api/challenges/SLUG/submissions, CONTRACT.md), waits for the verdict (long-polling
  GET /api/submissions/ID) and prints it as `kvprep grade` does. The token (or the KVPREP_TOKEN
  environment variable) is a personal API token from the account page: the attempt is then the
  account's, with its history and rate limit. Without one it is a new guest's, kept by nobody.

Exit status, as `kvprep grade`'s: 0 when the verdict is `passed`, 1 for any other verdict, 2 for
a usage error, a refused request or a server that cannot be reached.
"""

from __future__ import annotations

import argparse
import http.cookiejar
import json
import os
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import quote

from app.enums import SubmissionStatus
from graders.verdict import Verdict

TOKEN_ENV = "KVPREP_TOKEN"
# The server answers a long-poll after at most 30 s (app/routes/submissions.py MAX_WAIT_S).
POLL_S = 30
PROMPT_FILE = "prompt.md"
STARTER_FILE = "starter.py"


class ClientError(Exception):
    """Something to tell the user in one line, exiting 2."""


class Server:
    """JSON over HTTP to one kvprep server, with a token or, without one, a guest's cookies."""

    def __init__(self, url: str, token: str | None, timeout_s: float = POLL_S + 15) -> None:
        if not url.startswith(("http://", "https://")):
            raise ClientError(f"--server must be an http:// or https:// address, not {url!r}")
        self.base = url.rstrip("/")
        self.token = token
        self.timeout_s = timeout_s
        self.opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
        )

    def request(self, method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        headers = {"Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        request = urllib.request.Request(self.base + path, data=data, headers=headers, method=method)
        try:
            with self.opener.open(request, timeout=self.timeout_s) as response:
                return dict(json.load(response))
        except urllib.error.HTTPError as exc:
            raise ClientError(_refusal(exc)) from None
        except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
            reason = getattr(exc, "reason", exc)
            raise ClientError(f"cannot reach {self.base}: {reason}") from None
        except json.JSONDecodeError:
            raise ClientError(f"{self.base}{path} did not answer JSON: is it a kvprep server?") from None


def _refusal(exc: urllib.error.HTTPError) -> str:
    """The server's own words for a refusal ({"detail": ...}), with its status."""
    try:
        detail: Any = json.loads(exc.read() or b"{}").get("detail", exc.reason)
    except (json.JSONDecodeError, AttributeError):
        detail = exc.reason
    if isinstance(detail, list):  # a validation error: [{"loc", "msg", "type"}]
        detail = "; ".join(str(d.get("msg", d)) for d in detail if isinstance(d, dict))
    text = f"the server refused ({exc.code}): {detail}"
    if exc.code == 429 and exc.headers.get("Retry-After"):
        text += f" (try again in {exc.headers['Retry-After']} s)"
    return text


def _pull(args: argparse.Namespace) -> int:
    if args.server:
        data = Server(args.server, None).request("GET", f"/api/challenges/{quote(args.slug, safe='')}")
        prompt, starter = str(data["prompt"]), str(data["starter_code"])
    else:
        from app.config import get_settings
        from app.content.challenges import load_challenges

        found = {c.slug: c for c in load_challenges(get_settings().content_root)}
        challenge = found.get(args.slug)
        if challenge is None:
            raise ClientError(f"unknown challenge {args.slug!r} (known: {', '.join(sorted(found))})")
        prompt, starter = challenge.prompt, challenge.starter
    folder = Path(args.dir) if args.dir else Path(args.slug)
    files = {folder / PROMPT_FILE: prompt, folder / STARTER_FILE: starter}
    kept = [p for p in files if p.exists()]
    if kept and not args.force:
        names = ", ".join(str(p) for p in kept)
        raise ClientError(
            f"{names} already there (your work?): pass --force to overwrite, or --dir elsewhere"
        )
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for path, text in files.items():
            path.write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")
    except OSError as exc:
        raise ClientError(f"cannot write into {folder}: {exc}") from None
    print(f"wrote {folder / PROMPT_FILE} and {folder / STARTER_FILE}")
    print(f"when it is ready: kvprep submit {args.slug} {folder / STARTER_FILE} --server URL")
    return 0


def format_verdict(done: dict[str, Any]) -> str:
    """The verdict as `kvprep grade` prints it, then the hint for each known mistake it names."""
    from graders.cli import format_result
    from graders.verdict import Result, TestResult, Verdict

    result = Result(
        challenge=str(done.get("challenge", "")),
        verdict=Verdict(done["verdict"]),
        tests=[
            TestResult(str(t["name"]), bool(t["passed"]), str(t.get("message", ""))) for t in done["tests"]
        ],
        diagnosis=[str(d) for d in done.get("diagnosis", [])],
        duration_ms=int(done.get("duration_ms", 0)),
        output=str(done.get("output", "")),
    )
    lines = [format_result(result)]
    for hint in done.get("mistake_hints") or []:
        lines.append(f"hint ({hint['mistake']}): {hint['hint']}")
    return "\n".join(lines)


def _submit(args: argparse.Namespace) -> int:
    try:
        code = Path(args.file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ClientError(f"cannot read {args.file}: {exc}") from None
    token = args.token or os.environ.get(TOKEN_ENV) or None
    if token is None:
        print(
            f"kvprep submit: no token (--token or {TOKEN_ENV}): submitting as a new guest, "
            "kept by no account",
            file=sys.stderr,
        )
    server = Server(args.server, token)
    slug = quote(args.slug, safe="")
    queued = server.request("POST", f"/api/challenges/{slug}/submissions", {"code": code})
    submission_id = quote(str(queued["id"]), safe="")
    deadline = time.monotonic() + args.wait
    done = queued
    while done.get("status") != SubmissionStatus.DONE:
        left = deadline - time.monotonic()
        if left <= 0:
            raise ClientError(
                f"no verdict after {args.wait:g} s (still {done.get('status')}): "
                f"GET {server.base}/api/submissions/{submission_id} later"
            )
        wait = max(1, min(POLL_S, int(left)))
        done = server.request("GET", f"/api/submissions/{submission_id}?wait={wait}")
    print(json.dumps(done) if args.json else format_verdict(done))
    return 0 if done.get("verdict") == Verdict.PASSED else 1


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kvprep")
    sub = parser.add_subparsers(dest="command", required=True)
    challenges = sub.add_parser("challenges", help="work on a challenge at home")
    actions = challenges.add_subparsers(dest="action", required=True)
    pull = actions.add_parser("pull", help="write a challenge's prompt and starter code to files")
    pull.add_argument("slug", metavar="SLUG", help="the challenge, e.g. decode-step")
    pull.add_argument("--dir", help="the folder to write into (default: ./SLUG)")
    pull.add_argument(
        "--server", metavar="URL", help="take it from this server (default: this checkout's bank)"
    )
    pull.add_argument("--force", action="store_true", help="overwrite prompt.md and starter.py if there")
    pull.set_defaults(func=_pull)
    submit = sub.add_parser("submit", help="submit a file to a running server and print the verdict")
    submit.add_argument("slug", metavar="SLUG")
    submit.add_argument("file", metavar="FILE")
    submit.add_argument("--server", metavar="URL", required=True, help="e.g. http://127.0.0.1:8000")
    submit.add_argument(
        "--token", help=f"a personal API token (default: ${TOKEN_ENV}, which `ps` does not show)"
    )
    submit.add_argument("--json", action="store_true", help="print the verdict as one JSON object")
    submit.add_argument("--wait", type=float, default=300, metavar="S", help="give up after S seconds (300)")
    submit.set_defaults(func=_submit)
    return parser


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    try:
        return int(args.func(args))
    except ClientError as exc:
        print(f"kvprep {args.command}: {exc}", file=sys.stderr)
        return 2

"""`kvprep bench grader` and `kvprep bench pages`: latency through the HTTP API of a server.

`bench pages` times the main pages and API calls (p50/p95 of 100 keep-alive requests each).

One run measures, on this machine:
- the baseline: median wall time of a cold `python -c "import torch"` (what a fresh process
  per verdict would cost before running a single line of the submission);
- p50 and p95 submit-to-verdict latency of sequential `decode-step` submissions;
- a burst of concurrent submissions, every one of which must get a verdict.
It starts its own server (`kvprep serve` on a temporary SQLite file) unless --url is given.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from app.config import ROOT

SOLUTION = ROOT / "questions" / "challenges" / "decode-step" / "solution.py"


class Client:
    """One keep-alive HTTP connection with its own guest-session cookie."""

    def __init__(self, base: str) -> None:
        parts = urlsplit(base)
        self.conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port or 80, timeout=120)
        self.cookie = ""

    def request(
        self, method: str, path: str, body: dict | None = None, accept: str = "application/json"
    ) -> tuple[int, dict]:
        headers = {"Accept": accept}
        if self.cookie:
            headers["Cookie"] = self.cookie
        payload = None
        if body is not None:
            payload = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        self.conn.request(method, path, body=payload, headers=headers)
        response = self.conn.getresponse()
        data = response.read()
        if response.status >= 500:
            raise RuntimeError(f"{method} {path}: HTTP {response.status}: {data[:200]!r}")
        cookie = response.getheader("set-cookie")
        if cookie:
            self.cookie = cookie.split(";", 1)[0]
        if "json" not in (response.getheader("content-type") or ""):
            return response.status, {}
        return response.status, json.loads(data) if data else {}

    def submit_and_wait(
        self, slug: str, code: str, poll_s: float = 0.01, backoff: float = 1.0
    ) -> tuple[float, str]:
        """POST, then poll until the verdict is out; the delay grows by `backoff` up to 1 s."""
        start = time.perf_counter()
        status, body = self.request("POST", f"/api/challenges/{slug}/submissions", {"code": code})
        if status != 202:
            raise RuntimeError(f"submission refused: {status} {body}")
        delay = poll_s
        while body.get("status") != "done":
            time.sleep(delay)
            delay = min(delay * backoff, 1.0)
            _, body = self.request("GET", f"/api/submissions/{body['id']}")
        return time.perf_counter() - start, str(body["verdict"])


def cold_torch_import_s(runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import torch"], check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


@contextmanager
def serving(url: str | None) -> Iterator[str]:
    """The base URL of `url`, or of a `kvprep serve` of our own that is stopped afterwards.

    When the benchmark fails, the tail of our server's log goes to stderr.
    """
    if url is not None:
        yield url
        return
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "server.log"
        proc, base = start_server(Path(tmp), log)
        try:
            yield base
        except Exception:
            print(log.read_text(errors="replace")[-4000:], file=sys.stderr)
            raise
        finally:
            proc.terminate()
            proc.wait(timeout=30)


def start_server(tmp: Path, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {
        **os.environ,
        "KVPREP_DATABASE_URL": f"sqlite:///{tmp / 'bench.sqlite3'}",
        "KVPREP_QUEUE_FILE": str(tmp / "queue.sqlite3"),
        "KVPREP_SUBMISSIONS_PER_MINUTE": "100000",
        "OMP_NUM_THREADS": "1",
    }
    with log.open("wb") as out:  # the child keeps its own copy of the descriptor
        proc = subprocess.Popen(
            [sys.executable, "-m", "app.cli", "serve", "--port", str(port)],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            Client(base).request("GET", "/api/challenges")
            return proc, base
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError("the server did not start")


def solution(slug: str) -> str:
    return (ROOT / "questions" / "challenges" / slug / "solution.py").read_text()


def run(
    base: str, n_sequential: int, n_burst: int, baseline_runs: int, challenges: list[str] | None = None
) -> dict[str, Any]:
    """The figures of one run. With `challenges`, their solutions are submitted in turn with
    decode-step's (round-robin, so load on the machine falls on all of them alike)."""
    code = SOLUTION.read_text()
    baseline = cold_torch_import_s(baseline_runs)
    client = Client(base)
    slugs = ["decode-step", *[c for c in challenges or [] if c != "decode-step"]]
    codes = {slug: solution(slug) for slug in slugs}
    for slug in slugs:
        client.submit_and_wait(slug, codes[slug])  # warm-up: first fork, first imports
    per_slug: dict[str, list[float]] = {slug: [] for slug in slugs}
    for _ in range(n_sequential):
        for slug in slugs:
            elapsed, verdict = client.submit_and_wait(slug, codes[slug])
            if verdict != "passed":
                raise RuntimeError(f"the {slug} reference solution got {verdict}")
            per_slug[slug].append(elapsed)
    latencies = per_slug["decode-step"]

    verdicts: list[str] = []
    lock = threading.Lock()

    def one() -> None:
        # Like the browser's page: 50 ms, then 1.5 times longer each poll, up to 1 s.
        _, verdict = Client(base).submit_and_wait("decode-step", code, poll_s=0.05, backoff=1.5)
        with lock:
            verdicts.append(verdict)

    burst_start = time.perf_counter()
    threads = [threading.Thread(target=one) for _ in range(n_burst)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    burst_s = time.perf_counter() - burst_start
    p50, p95 = statistics.median(latencies), percentile(latencies, 0.95)
    figures: dict[str, Any] = {
        "baseline_cold_import_torch_ms": round(baseline * 1000, 1),
        "p50_ms": round(p50 * 1000, 1),
        "p95_ms": round(p95 * 1000, 1),
        "p50_over_baseline": round(p50 / baseline, 4),
        "burst_submissions": n_burst,
        "burst_verdicts": len(verdicts),
        "burst_passed": verdicts.count("passed"),
        "burst_wall_s": round(burst_s, 2),
    }
    if len(slugs) > 1:
        figures["challenges"] = {
            slug: {
                "p50_ms": round(statistics.median(times) * 1000, 1),
                "p95_ms": round(percentile(times, 0.95) * 1000, 1),
                "p50_over_decode_step": round(statistics.median(times) / p50, 2),
            }
            for slug, times in per_slug.items()
            if slug != "decode-step"
        }
    return figures


PAGES = [
    "/",
    "/cards",
    "/cards?q=gqa+memory",
    "/cards/what-the-cache-stores",
    "/challenges/decode-step",
    "/api/cards?page_size=50",
    "/progress",
]


def run_pages(base: str, n: int) -> dict[str, dict[str, float]]:
    client = Client(base)
    figures = {}
    for path in PAGES:
        client.request("GET", path, accept="text/html")
        times = []
        for _ in range(n):
            start = time.perf_counter()
            status, _ = client.request("GET", path, accept="text/html")
            times.append(time.perf_counter() - start)
            if status != 200:
                raise RuntimeError(f"GET {path}: HTTP {status}")
        figures[path] = {
            "p50_ms": round(statistics.median(times) * 1000, 1),
            "p95_ms": round(percentile(times, 0.95) * 1000, 1),
        }
    return figures


def pages_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="kvprep bench pages", description=__doc__)
    parser.add_argument("--url", help="a running server (default: start one)")
    parser.add_argument("--n", type=int, default=100, help="requests per page")
    args = parser.parse_args(argv)
    with serving(args.url) as base:
        figures = run_pages(base, args.n)
    print(json.dumps(figures, indent=2))
    return 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="kvprep bench grader", description=__doc__)
    parser.add_argument("--url", help="a running server (default: start one)")
    parser.add_argument("--n", type=int, default=50, help="sequential submissions")
    parser.add_argument("--burst", type=int, default=100, help="concurrent submissions")
    parser.add_argument("--baseline-runs", type=int, default=5)
    parser.add_argument(
        "--challenge",
        action="append",
        default=[],
        metavar="SLUG",
        help="also time this challenge's solution against decode-step's, in the same run (repeatable)",
    )
    args = parser.parse_args(argv)
    from graders.checks import CHALLENGE_MODULES

    unknown = [slug for slug in args.challenge if slug not in CHALLENGE_MODULES]
    if unknown:
        parser.error(f"unknown challenge {unknown[0]!r}; known: {', '.join(CHALLENGE_MODULES)}")
    with serving(args.url) as base:
        figures = run(base, args.n, args.burst, args.baseline_runs, args.challenge)
    print(json.dumps(figures, indent=2))
    ok = (
        figures["p50_ms"] <= 100
        and figures["p95_ms"] <= 250
        and figures["p50_over_baseline"] <= 0.05
        and figures["burst_verdicts"] == args.burst
        and all(c["p50_over_decode_step"] <= 1.5 for c in figures.get("challenges", {}).values())
    )
    print(
        "targets (p50 <= 100 ms, p95 <= 250 ms, p50 <= 0.05x baseline, every burst verdict, "
        "each --challenge p50 <= 1.5x decode-step's):",
        "met" if ok else "NOT met",
    )
    return 0 if ok else 1

"""`kvprep bench grader`: submit-to-verdict latency through the HTTP API, and a burst.

One run measures, on this machine:
- the baseline: median wall time of a cold `python -c "import torch"` (what a fresh process
  per verdict would cost before running a single line of the submission);
- p50 and p95 submit-to-verdict latency of sequential correct `decode-step` submissions,
  as a client sees it: the POST, then the long-poll `GET /api/submissions/{id}?wait=30`
  (and, alternating with those, plain polling every 10 ms, for comparison);
- with `--challenge SLUG` (repeatable), the same for each challenge's own solution.py, its
  submissions interleaved with decode-step's (so both meet the same machine), and each p50 as
  a ratio of decode-step's (target: at most 1.5);
- a burst: `--burst` concurrent submissions from `--users` guests, every one of which must
  get its verdict, while wrk loads the card page (its p50/p99 during the burst are reported).
It starts its own server (`kvprep serve` on a temporary SQLite file) unless --url is given.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import threading
import time
from typing import Any

from app.bench import wrk
from app.bench.common import Client, percentile, serving
from app.config import ROOT
from graders.verdict import Verdict

CHALLENGES = ROOT / "questions" / "challenges"
SOLUTION = CHALLENGES / "decode-step" / "solution.py"
BASELINE_SLUG = "decode-step"
MAX_RATIO_TO_DECODE_STEP = 1.5
CARD_PAGE = "/cards/what-the-cache-stores"


def cold_torch_import_s(runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import torch"], check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def sequential(client: Client, code: str, n: int) -> tuple[list[float], list[float]]:
    """n long-polled and n polled submissions, alternating, so both meet the same machine."""
    long_polled: list[float] = []
    polled: list[float] = []
    for i in range(2 * n):
        long_poll = i % 2 == 0
        elapsed, verdict = client.submit_and_wait("decode-step", code, poll_s=0.01, long_poll=long_poll)
        if verdict != Verdict.PASSED:
            raise RuntimeError(f"the reference solution got {verdict}")
        (long_polled if long_poll else polled).append(elapsed)
    return long_polled, polled


def per_challenge(client: Client, slugs: list[str], n: int) -> dict[str, dict[str, float]]:
    """n long-polled submissions of each challenge's solution and of decode-step's, interleaved."""
    codes = {slug: (CHALLENGES / slug / "solution.py").read_text() for slug in [BASELINE_SLUG, *slugs]}
    for slug, code in codes.items():  # warm-up: first fork, first imports of each battery
        client.submit_and_wait(slug, code, long_poll=True)
    times: dict[str, list[float]] = {slug: [] for slug in codes}
    for _ in range(n):
        for slug, code in codes.items():
            elapsed, verdict = client.submit_and_wait(slug, code, long_poll=True)
            if verdict != Verdict.PASSED:
                raise RuntimeError(f"the worked solution of {slug} got {verdict}")
            times[slug].append(elapsed)
    return latency_ratios(times)


def latency_ratios(times: dict[str, list[float]]) -> dict[str, dict[str, float]]:
    """Per challenge but the baseline: p50 and p95 in ms and its p50 over decode-step's
    (the figure MAX_RATIO_TO_DECODE_STEP bounds). `times` are seconds, baseline included."""
    base_p50 = statistics.median(times[BASELINE_SLUG])
    return {
        slug: {
            "p50_ms": round(statistics.median(t) * 1000, 1),
            "p95_ms": round(percentile(t, 0.95) * 1000, 1),
            "p50_over_decode_step": round(statistics.median(t) / base_p50, 3),
        }
        for slug, t in times.items()
        if slug != BASELINE_SLUG
    }


def burst(base: str, code: str, n: int, users: int) -> dict[str, float | int]:
    """n submissions at once from `users` guests (each guest's cookie shared by its submissions)."""
    cookies = []
    for _ in range(users):
        client = Client(base)
        client.request("GET", "/", accept="text/html")  # a guest session, as a browser has
        cookies.append(client.cookie)
    verdicts: list[str] = []
    failures: list[str] = []
    lock = threading.Lock()

    def one(i: int) -> None:
        try:
            _, verdict = Client(base, cookies[i % users]).submit_and_wait("decode-step", code, long_poll=True)
        except Exception as exc:  # counted, not raised: every submission must get its verdict
            with lock:
                failures.append(repr(exc))
            return
        with lock:
            verdicts.append(verdict)

    background = wrk.Background(base + CARD_PAGE, connections=4, headers={"Accept": "text/html"})
    start = time.perf_counter()
    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - start
    page = background.stop()
    if failures:
        print(f"{len(failures)} burst submissions failed, e.g. {failures[0]}", file=sys.stderr)
    return {
        "burst_submissions": n,
        "burst_users": users,
        "burst_verdicts": len(verdicts),
        "burst_passed": verdicts.count("passed"),
        "burst_wall_s": round(wall, 2),
        "burst_card_page_requests": page.requests,
        "burst_card_page_p50_ms": round(page.p50_ms, 1),
        "burst_card_page_p99_ms": round(page.p99_ms, 1),
        "burst_card_page_errors": page.bad_responses + page.socket_errors,
    }


def run(
    base: str, n: int, n_burst: int, users: int, baseline_runs: int, challenges: tuple[str, ...] = ()
) -> dict[str, Any]:
    code = SOLUTION.read_text()
    baseline = cold_torch_import_s(baseline_runs)
    client = Client(base)
    client.submit_and_wait("decode-step", code, long_poll=True)  # warm-up: first fork, first imports
    long_polled, polled = sequential(client, code, n)
    p50 = statistics.median(long_polled)
    figures: dict[str, Any] = {
        "baseline_cold_import_torch_ms": round(baseline * 1000, 1),
        "p50_ms": round(p50 * 1000, 1),
        "p95_ms": round(percentile(long_polled, 0.95) * 1000, 1),
        "p50_over_baseline": round(p50 / baseline, 4),
        "polling_10ms_p50_ms": round(statistics.median(polled) * 1000, 1),
        "polling_10ms_p95_ms": round(percentile(polled, 0.95) * 1000, 1),
    }
    others = [slug for slug in dict.fromkeys(challenges) if slug != BASELINE_SLUG]
    if others:
        figures["challenges"] = per_challenge(client, others, n)
    if n_burst:
        figures.update(burst(base, code, n_burst, users))
    return figures


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="kvprep bench grader", description=__doc__)
    parser.add_argument("--url", help="a running server (default: start one)")
    parser.add_argument("--n", type=int, default=30, help="sequential submissions (each way of waiting)")
    parser.add_argument("--burst", type=int, default=200, help="concurrent submissions")
    parser.add_argument("--users", type=int, default=50, help="guests the burst's submissions come from")
    parser.add_argument("--baseline-runs", type=int, default=5)
    parser.add_argument(
        "--challenge",
        action="append",
        default=[],
        metavar="SLUG",
        help="also time this challenge's solution.py against decode-step's (repeatable)",
    )
    args = parser.parse_args(argv)
    unknown = [slug for slug in args.challenge if not (CHALLENGES / slug / "solution.py").is_file()]
    if unknown:
        parser.error(f"no challenge {', '.join(unknown)} (see questions/challenges/)")
    if args.burst and shutil.which("wrk") is None:
        parser.error("the burst's page latency needs wrk (Debian: apt-get install wrk); or --burst 0")
    with serving(args.url) as base:
        figures = run(base, args.n, args.burst, args.users, args.baseline_runs, tuple(args.challenge))
    print(json.dumps(figures, indent=2))
    ok = (
        figures["p50_ms"] <= 100
        and figures["p95_ms"] <= 250
        and figures["p50_over_baseline"] <= 0.04
        and figures.get("burst_verdicts", 0) == args.burst
        and all(
            c["p50_over_decode_step"] <= MAX_RATIO_TO_DECODE_STEP
            for c in figures.get("challenges", {}).values()
        )
    )
    print(
        "targets (p50 <= 100 ms, p95 <= 250 ms, p50 <= 0.04x baseline, every burst verdict,"
        f" each --challenge p50 <= {MAX_RATIO_TO_DECODE_STEP}x decode-step's):",
        "met" if ok else "NOT met",
    )
    return 0 if ok else 1

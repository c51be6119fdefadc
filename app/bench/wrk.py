"""Run Debian's `wrk` (a real load generator, in C) and read its figures."""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
from dataclasses import dataclass

_UNITS = {"us": 1e-3, "ms": 1.0, "s": 1000.0}


@dataclass(frozen=True)
class WrkResult:
    requests_per_s: float
    p50_ms: float
    p99_ms: float
    requests: int
    bad_responses: int  # non-2xx/3xx
    socket_errors: int


def wrk_path() -> str:
    path = shutil.which("wrk")
    if path is None:
        raise RuntimeError("kvprep bench needs wrk (Debian: apt-get install wrk)")
    return path


def _ms(text: str) -> float:
    match = re.fullmatch(r"([\d.]+)(us|ms|s)", text.strip())
    if match is None:
        raise ValueError(f"unreadable wrk latency {text!r}")
    return float(match[1]) * _UNITS[match[2]]


def parse(output: str) -> WrkResult:
    rps = re.search(r"Requests/sec:\s+([\d.]+)", output)
    p50 = re.search(r"^\s+50%\s+(\S+)", output, re.M)
    p99 = re.search(r"^\s+99%\s+(\S+)", output, re.M)
    total = re.search(r"(\d+) requests in", output)
    if not (rps and p50 and p99 and total):
        raise RuntimeError(f"unreadable wrk output:\n{output}")
    bad = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", output)
    errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", output)
    return WrkResult(
        requests_per_s=float(rps[1]),
        p50_ms=_ms(p50[1]),
        p99_ms=_ms(p99[1]),
        requests=int(total[1]),
        bad_responses=int(bad[1]) if bad else 0,
        socket_errors=sum(int(n) for n in errors.groups()) if errors else 0,
    )


def command(
    url: str, *, connections: int, seconds: float, threads: int, headers: dict[str, str]
) -> list[str]:
    args = [wrk_path(), f"-t{threads}", f"-c{connections}", f"-d{max(1, round(seconds))}s", "--latency"]
    for name, value in headers.items():
        args += ["-H", f"{name}: {value}"]
    return [*args, url]


def run(
    url: str, *, connections: int, seconds: float, threads: int = 1, headers: dict[str, str] | None = None
) -> WrkResult:
    args = command(url, connections=connections, seconds=seconds, threads=threads, headers=headers or {})
    done = subprocess.run(args, capture_output=True, text=True, timeout=seconds + 60, check=True)
    return parse(done.stdout)


class Background:
    """wrk running until stop(): the page's latency while something else (a burst) goes on."""

    def __init__(self, url: str, *, connections: int, headers: dict[str, str] | None = None) -> None:
        args = command(url, connections=connections, seconds=3600, threads=1, headers=headers or {})
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    def stop(self) -> WrkResult:
        self.proc.send_signal(signal.SIGINT)  # wrk stops and prints what it measured so far
        output, _ = self.proc.communicate(timeout=30)
        return parse(output)

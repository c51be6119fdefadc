"""What both benchmarks share: a keep-alive client with its own cookie, and a server of their own."""

from __future__ import annotations

import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

from app.enums import SubmissionStatus


class Client:
    """One keep-alive HTTP connection with its own cookies, kept as a browser keeps them: every
    Set-Cookie by name (the session and the device cookie arrive in separate headers, and a later
    response may refresh one of them without the other)."""

    def __init__(self, base: str, cookie: str = "") -> None:
        parts = urlsplit(base)
        self.conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port or 80, timeout=120)
        self.jar: dict[str, str] = {}
        for pair in filter(None, (part.strip() for part in cookie.split(";"))):
            name, _, value = pair.partition("=")
            self.jar[name] = value

    @property
    def cookie(self) -> str:
        """The Cookie header this client sends."""
        return "; ".join(f"{name}={value}" for name, value in self.jar.items())

    def keep_cookies(self, response: http.client.HTTPResponse) -> None:
        """Keep each Set-Cookie of `response` (a deleted cookie, Max-Age=0, is dropped)."""
        for header in response.msg.get_all("set-cookie") or []:
            pair, _, attributes = header.partition(";")
            name, _, value = pair.strip().partition("=")
            if "max-age=0" in attributes.lower().replace(" ", ""):
                self.jar.pop(name, None)
            else:
                self.jar[name] = value

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
        self.keep_cookies(response)
        if "json" not in (response.getheader("content-type") or ""):
            return response.status, {}
        return response.status, json.loads(data) if data else {}

    def submit_and_wait(
        self, slug: str, code: str, poll_s: float = 0.01, backoff: float = 1.0, long_poll: bool = False
    ) -> tuple[float, str]:
        """POST, then ask until the verdict is out.

        Polling: wait `poll_s`, growing by `backoff` up to 1 s, between asks. Long-polling:
        `?wait=30`, which the server answers the moment the verdict is stored.
        """
        start = time.perf_counter()
        status, body = self.request("POST", f"/api/challenges/{slug}/submissions", {"code": code})
        if status != 202:
            raise RuntimeError(f"submission refused: {status} {body}")
        delay = poll_s
        while body.get("status") != SubmissionStatus.DONE:
            if long_poll:
                _, body = self.request("GET", f"/api/submissions/{body['id']}?wait=30")
                continue
            time.sleep(delay)
            delay = min(delay * backoff, 1.0)
            _, body = self.request("GET", f"/api/submissions/{body['id']}")
        return time.perf_counter() - start, str(body["verdict"])


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def median(values: list[float]) -> float:
    return statistics.median(values)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_until_up(base: str, path: str, proc: subprocess.Popen[bytes], timeout_s: float = 180) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the server at {base} exited with {proc.returncode}")
        probe = Client(base)
        try:
            probe.request("GET", path)
            return
        except OSError:
            time.sleep(0.2)
        finally:
            probe.conn.close()
    proc.kill()
    raise RuntimeError(f"the server at {base} did not start")


def start_server(
    tmp: Path, log: Path, *, workers: int = 1, wait: bool = True
) -> tuple[subprocess.Popen[bytes], str]:
    """`kvprep serve` on a SQLite file in `tmp`, its output in `log`; by default, once it answers."""
    port = free_port()
    env = {
        **os.environ,
        "KVPREP_DATABASE_URL": f"sqlite:///{tmp / 'bench.sqlite3'}",
        "KVPREP_QUEUE_FILE": str(tmp / "queue.sqlite3"),
        "KVPREP_RATELIMIT_FILE": str(tmp / "rate-limits.sqlite3"),
        "KVPREP_LAB_LOCK_FILE": str(tmp / "lab.lock"),
        "KVPREP_SUBMISSIONS_PER_MINUTE": "100000",
        "KVPREP_GUESTS_PER_HOUR": "100000",
        "OMP_NUM_THREADS": "1",
    }
    command = [sys.executable, "-m", "app.cli", "serve", "--port", str(port), "--workers", str(workers)]
    with log.open("wb") as out:  # the child keeps its own copy of the descriptor
        proc = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    if wait:
        wait_until_up(base, "/api/challenges", proc)
    return proc, base


@contextmanager
def serving(url: str | None, workers: int = 1) -> Iterator[str]:
    """The base URL of `url`, or of a `kvprep serve --workers N` of our own, stopped afterwards.

    Ours runs on a temporary SQLite file; when the benchmark fails, the tail of its log goes to stderr.
    """
    if url is not None:
        yield url
        return
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "server.log"
        proc, base = start_server(Path(tmp), log, workers=workers, wait=False)
        try:
            wait_until_up(base, "/api/challenges", proc)
            yield base
        except Exception:
            print(log.read_text(errors="replace")[-4000:], file=sys.stderr)
            raise
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

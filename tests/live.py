"""`kvprep serve` in a subprocess on a fresh SQLite file, as a user runs it: for the browser tests
(tests/browser/conftest.py's live_server) and the terminal client's (tests/test_cli_submit.py)."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from app.config import ROOT
from app.db import migrate


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def serve(folder: Path, **settings: str) -> Iterator[str]:
    """A server on `folder`/kvprep.sqlite3 (migrated here), its log in `folder`/server.log; its base URL.

    `settings` are environment variables for it (KVPREP_* names), over the defaults below."""
    folder.mkdir(parents=True, exist_ok=True)
    db = folder / "kvprep.sqlite3"
    url = f"sqlite:///{db}"
    migrate(url)
    port = free_port()
    # Its own queue file too: servers sharing one SQLite queue would take each other's tasks.
    env = {
        **os.environ,
        "KVPREP_DATABASE_URL": url,
        "KVPREP_QUEUE_FILE": str(folder / "queue.sqlite3"),
        "KVPREP_LAB_LOCK_FILE": str(folder / "lab.lock"),
        "OMP_NUM_THREADS": "1",
        **settings,
    }
    with (folder / "server.log").open("w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "app.cli", "serve", "--port", str(port)],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(base + "/", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError(f"server did not start; see {log.name}")
            time.sleep(0.2)
        try:
            yield base
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()

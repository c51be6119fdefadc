"""A sandbox killed with SIGKILL leaves its temporary folders; the next start removes them."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from graders.sandbox.client import SERVER_PREFIX, WORK_PREFIX, ForkServerClient


def test_a_restart_removes_the_folders_a_killed_sandbox_left() -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()  # its pid names folders nobody owns any more
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    root = Path(tempfile.gettempdir())
    left = [root / f"{SERVER_PREFIX}{gone.pid}-abc", root / f"{WORK_PREFIX}{gone.pid}-abc"]
    kept = root / f"{WORK_PREFIX}{alive.pid}-abc"
    try:
        for folder in [*left, kept]:
            (folder / "7").mkdir(parents=True)
            (folder / "7" / "submission.py").write_text("x = 1\n")
        client = ForkServerClient(worker_slots=1, spares=0)
        try:
            client.ensure_started()
            assert not any(folder.exists() for folder in left)
            assert kept.exists()  # its maker still runs
            own = [p for p in os.listdir(root) if p.startswith(f"{WORK_PREFIX}{os.getpid()}-")]
            assert own, "the client names its own folders by its pid"
        finally:
            client.shutdown()
    finally:
        alive.kill()
        alive.wait()
        for folder in [*left, kept]:
            subprocess.run(["rm", "-rf", str(folder)], check=False)

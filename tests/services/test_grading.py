"""The grading service's start-up report of the sandbox's isolation layers."""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from app.bench.common import start_server
from app.services.grading import log_isolation
from graders.limits import Limits
from graders.runner import warm_up


def test_start_up_names_every_isolation_layer(caplog: pytest.LogCaptureFixture) -> None:
    layers = warm_up(Limits())
    with caplog.at_level(logging.INFO, logger="kvprep.grading"):
        log_isolation(Limits())
    lines = [r.getMessage() for r in caplog.records if r.name == "kvprep.grading"]
    for layer, info in layers.items():
        line = next(m for m in lines if m.startswith(f"sandbox layer {layer} "))
        assert info.get("detail", "") in line
    if os.geteuid() == 0:
        assert any(m.startswith("sandbox layer userns") and "not needed" in m for m in lines)
        ipc = next(m for m in lines if m.startswith("sandbox layer ipcns "))
        assert "active" in ipc and "SysV IPC" in ipc, ipc
    uid_on = layers.get("uid", {}).get("active")
    inactive = [
        layer
        for layer, info in layers.items()
        if not info.get("active") and not (layer == "userns" and uid_on)
    ]
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == len(inactive)


def test_a_stopped_server_leaves_no_temporary_folders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`kvprep serve` stopped with SIGTERM (what systemd, Docker and bench send) cleans up after itself."""
    # Where the server's tempfile.mkdtemp folders go: a short path, as /tmp is, since the control
    # socket inside must fit AF_UNIX's 108 bytes (pytest's per-worker tmp_path is too deep for it).
    tmpdir = Path(tempfile.mkdtemp(prefix="kvt-", dir="/tmp"))
    monkeypatch.setenv("TMPDIR", str(tmpdir))
    proc, _ = start_server(tmp_path, tmp_path / "server.log")
    try:
        running = sorted(p.name for p in tmpdir.glob("kvprep-*") if p.is_dir())
        assert len(running) == 2, running  # the fork server's folder and its submissions' folder
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    left = sorted(p.name for p in tmpdir.glob("kvprep-*"))
    shutil.rmtree(tmpdir, ignore_errors=True)
    assert left == [], (tmp_path / "server.log").read_text()[-2000:]

"""A damaged SQLite file at start-up: a clear message naming the file, never a traceback."""

from __future__ import annotations

import os
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import text

from app.config import ROOT, Settings
from app.db import DatabaseFileError, check_sqlite_file, check_sqlite_files, make_engine, migrate
from app.services.embedded_queue import make_embedded_huey

KVPREP = [sys.executable, "-m", "app.cli"]


def garbage(path: Path) -> Path:
    path.write_bytes(b"this is not a database, it is a note somebody saved here\n" * 100)
    return path


def damaged_past_the_header(path: Path) -> Path:
    """A real database whose pages after the first are overwritten: its header still reads fine."""
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE t (x TEXT)")
        conn.executemany("INSERT INTO t VALUES (?)", [(f"row {i}" * 20,) for i in range(2000)])
    conn.close()
    data = bytearray(path.read_bytes())
    page = 4096
    data[page : page * 4] = b"\xff" * (page * 3)
    path.write_bytes(bytes(data))
    return path


def run_kvprep(args: list[str], tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{tmp_path / 'ok.sqlite3'}",
        "KVPREP_QUEUE_FILE": str(tmp_path / "queue.sqlite3"),
        "KVPREP_RATELIMIT_FILE": str(tmp_path / "limits.sqlite3"),
        **env,
    }
    environment.pop("REDIS_URL", None)
    return subprocess.run(
        [*KVPREP, *args], env=environment, capture_output=True, text=True, timeout=120, check=False
    )


@pytest.mark.parametrize(
    "command", [["migrate"], ["serve", "--port", "1"], ["sync-content"], ["purge-guests"]]
)
def test_a_broken_database_file_is_named_for_every_command(tmp_path: Path, command: list[str]) -> None:
    broken = garbage(tmp_path / "kvprep.sqlite3")
    done = run_kvprep(command, tmp_path, DATABASE_URL=f"sqlite:///{broken}")
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert str(broken) in done.stderr and "not a usable SQLite database" in done.stderr
    assert "DATABASE_URL" in done.stderr


def test_a_broken_queue_file_is_named_at_serve(tmp_path: Path) -> None:
    broken = garbage(tmp_path / "grading-queue.sqlite3")
    done = run_kvprep(["serve", "--port", "1"], tmp_path, KVPREP_QUEUE_FILE=str(broken))
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert str(broken) in done.stderr and "grading queue" in done.stderr


def test_damage_past_the_header_is_found(tmp_path: Path) -> None:
    broken = damaged_past_the_header(tmp_path / "kvprep.sqlite3")
    with pytest.raises(DatabaseFileError, match=str(broken)):
        check_sqlite_file(broken, "database")


def test_healthy_missing_and_empty_files_pass(tmp_path: Path) -> None:
    healthy = tmp_path / "ok.sqlite3"
    with sqlite3.connect(healthy) as conn:
        conn.execute("CREATE TABLE t (x)")
    conn.close()
    (tmp_path / "empty.sqlite3").touch()
    check_sqlite_file(healthy, "database")
    check_sqlite_file(tmp_path / "missing.sqlite3", "database")
    check_sqlite_file(tmp_path / "empty.sqlite3", "database")
    settings = Settings(database_url=f"sqlite:///{healthy}", queue_file=garbage(tmp_path / "queue.sqlite3"))
    with pytest.raises(DatabaseFileError, match="grading queue"):
        check_sqlite_files(settings)
    check_sqlite_files(settings.model_copy(update={"redis_url": "redis://127.0.0.1:6379"}))  # unused files


def test_the_database_and_queue_files_are_the_owners_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Created 0600, side files too, and files named after the database they serve."""
    # The test processes name their own queue and lock files (tests/conftest.py); here, the defaults.
    monkeypatch.delenv("KVPREP_QUEUE_FILE", raising=False)
    monkeypatch.delenv("KVPREP_LAB_LOCK_FILE", raising=False)
    database = tmp_path / "kvprep.sqlite3"
    settings = Settings(database_url=f"sqlite:///{database}", content_root=ROOT / "questions")
    assert settings.queue_file == tmp_path / "kvprep.sqlite3.grading-queue.sqlite3"
    assert settings.lab_lock_file == tmp_path / "kvprep.sqlite3.lab.lock"
    migrate(settings.database_url)
    engine = make_engine(settings.database_url)
    with engine.begin() as conn:
        conn.execute(text("select 1"))
    huey = make_embedded_huey("t", settings.queue_file)
    huey.storage.enqueue(b"task")
    for path in (database, settings.queue_file):
        for each in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
            if each.exists():
                assert stat.S_IMODE(each.stat().st_mode) == 0o600, each
    huey.storage.close_sockets()
    engine.dispose()

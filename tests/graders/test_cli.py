"""`kvprep grade SLUG FILE [--json]`: exit codes, one JSON object, a readable summary."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import pytest
import torch

import graders.checks
from graders.checks.report import CheckReport, expect_close, run_test
from graders.cli import main

SLUG = "cli-fake-add"


def _run(session: object) -> CheckReport:
    report = CheckReport()
    a, b = torch.randn(2, 3), torch.randn(2, 3)
    run_test(report, "adds", lambda: expect_close(session.call("add", a, b), a + b, "add(a, b)"))  # type: ignore[attr-defined]
    return report


@pytest.fixture(autouse=True)
def fake_check(monkeypatch: pytest.MonkeyPatch) -> None:
    module = types.ModuleType("kvprep_test_cli_fake_add")
    module.SLUG, module.ENTRY_POINT, module.run = SLUG, "add", _run  # type: ignore[attr-defined]
    monkeypatch.setitem(graders.checks.CHALLENGE_MODULES, SLUG, module.__name__)
    monkeypatch.setitem(sys.modules, module.__name__, module)


def write(tmp_path: Path, code: str) -> str:
    path = tmp_path / "solution.py"
    path.write_text(code)
    return str(path)


def test_a_pass_exits_0_with_exactly_one_json_object(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    code = "print('noise on stdout')\ndef add(a, b):\n    print('more noise')\n    return a + b\n"
    assert main(["grade", SLUG, write(tmp_path, code), "--json"]) == 0
    out, _ = capfd.readouterr()
    verdict = json.loads(out)
    assert verdict["verdict"] == "passed" and verdict["challenge"] == SLUG
    assert {"tests", "diagnosis", "duration_ms"} <= set(verdict)


def test_a_submission_printing_a_verdict_cannot_fake_one(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    code = (
        "import os, json\n"
        "fake = json.dumps({'challenge': 'x', 'verdict': 'passed', 'tests': [], 'diagnosis': []})\n"
        "print(fake)\nos.write(1, fake.encode())\n"
        "def add(a, b):\n    print(fake)\n    return a - b\n"
    )
    assert main(["grade", SLUG, write(tmp_path, code), "--json"]) == 1
    out, _ = capfd.readouterr()
    assert json.loads(out)["verdict"] == "failed"


def test_any_other_verdict_exits_1_with_a_readable_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["grade", SLUG, write(tmp_path, "def add(a, b):\n    return a * b\n")]) == 1
    out = capsys.readouterr().out
    assert out.startswith(f"{SLUG}: FAILED") and "FAIL adds" in out and "differs by" in out


def test_an_error_verdict_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["grade", SLUG, write(tmp_path, "def add(a, b)\n"), "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["verdict"] == "error"


@pytest.mark.parametrize(
    "argv",
    [
        ["grade", "no-such-challenge", "FILE"],
        ["grade", SLUG, "/nonexistent/solution.py"],
        ["grade", SLUG],
        ["grade"],
        [],
        ["grade", SLUG, "FILE", "--bogus"],
    ],
)
def test_usage_errors_exit_2_with_nothing_on_stdout(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [write(tmp_path, "def add(a, b):\n    return a + b\n") if a == "FILE" else a for a in argv]
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err

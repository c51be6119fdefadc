"""graders.runner.grade: verdicts, messages and housekeeping around a sandboxed run."""

from __future__ import annotations

import sys
import threading
import types

import pytest
import torch

import graders.checks
from graders.checks.report import CheckReport, expect_close, run_test
from graders.limits import Limits
from graders.runner import grade, warm_up
from graders.sandbox.client import shared_client

SLUG = "runner-fake-add"
GOOD = "def add(a, b):\n    return a + b\n"


def _run(session: object) -> CheckReport:
    report = CheckReport()
    for i in range(2):
        a, b = torch.randn(3, 4), torch.randn(3, 4)

        def body(a: torch.Tensor = a, b: torch.Tensor = b) -> None:
            expect_close(session.call("add", a, b), a + b, "add(a, b)")  # type: ignore[attr-defined]

        run_test(report, f"adds #{i}", body)
    return report


def _crashing_run(session: object) -> CheckReport:
    raise AssertionError("a bug in the check")


@pytest.fixture(autouse=True)
def fake_checks(monkeypatch: pytest.MonkeyPatch) -> None:
    for slug, run in ((SLUG, _run), (SLUG + "-broken", _crashing_run)):
        module = types.ModuleType(f"kvprep_test_{slug.replace('-', '_')}")
        module.SLUG, module.ENTRY_POINT, module.run = slug, "add", run  # type: ignore[attr-defined]
        monkeypatch.setitem(graders.checks.CHALLENGE_MODULES, slug, module.__name__)
        monkeypatch.setitem(sys.modules, module.__name__, module)


def test_a_correct_submission_passes_with_its_tests_and_duration() -> None:
    result = grade(SLUG, GOOD)
    assert result.verdict.value == "passed"
    assert [t.name for t in result.tests] == ["adds #0", "adds #1"]
    assert result.duration_ms > 0


def test_a_wrong_answer_fails_with_the_checks_message() -> None:
    result = grade(SLUG, "def add(a, b):\n    return a - b\n")
    assert result.verdict.value == "failed"
    assert "differs by" in result.tests[0].message


def test_an_exception_fails_the_test_with_its_type_and_message() -> None:
    result = grade(SLUG, "def add(a, b):\n    raise ValueError('shapes do not match')\n")
    assert result.verdict.value == "failed"
    assert result.tests[0].message == "your code raised ValueError: shapes do not match"


def test_a_syntax_error_is_an_error_with_the_line() -> None:
    result = grade(SLUG, "x = 1\ndef add(a, b)\n    return a + b\n")
    assert result.verdict.value == "error"
    assert "SyntaxError" in result.tests[0].message and "line 2" in result.tests[0].message


def test_an_import_error_is_an_error_with_the_line() -> None:
    result = grade(SLUG, "import math\nimport scipy_not_installed\n" + GOOD)
    assert result.verdict.value == "error"
    assert "ModuleNotFoundError" in result.tests[0].message and "line 2" in result.tests[0].message


def test_a_missing_entry_point_is_an_error_that_names_it() -> None:
    result = grade(SLUG, "def plus(a, b):\n    return a + b\n")
    assert result.verdict.value == "error"
    assert result.tests[0].name == "defines add" and "`add`" in result.tests[0].message


def test_a_failing_check_is_an_error_never_a_pass() -> None:
    assert grade(SLUG + "-broken", GOOD).verdict.value == "error"


def test_the_output_excerpt_is_the_capped_tail() -> None:
    code = "for i in range(3000):\n    print('line', i)\n" + GOOD
    result = grade(SLUG, code, Limits(output_excerpt_chars=200))
    assert result.verdict.value == "passed"
    assert len(result.output) <= 200 and result.output.rstrip().endswith("line 2999")


def test_an_unknown_slug_is_a_key_error() -> None:
    with pytest.raises(KeyError):
        grade("no-such-challenge", GOOD)


def test_concurrent_grading_threads_get_their_own_verdicts() -> None:
    codes = [GOOD, "def add(a, b):\n    return a * b\n"] * 4
    results: list[str] = [""] * len(codes)

    def work(i: int) -> None:
        results[i] = grade(SLUG, codes[i]).verdict.value

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(codes))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert results == ["passed", "failed"] * 4


def test_a_dead_fork_server_is_restarted() -> None:
    warm_up()
    client = shared_client()
    assert client._proc is not None
    client._proc.kill()
    client._proc.wait()
    assert grade(SLUG, GOOD).verdict.value == "passed"


def test_warm_up_reports_the_isolation_layers() -> None:
    layers = warm_up()
    assert {"pidns", "seccomp", "landlock"} <= set(layers)


@pytest.mark.skipif(
    "kv-cache-bytes" not in graders.checks.CHALLENGE_MODULES, reason="no kv-cache-bytes check"
)
def test_a_real_challenge_solution_passes_through_the_sandbox() -> None:
    from graders.checks import load_check

    try:
        load_check("kv-cache-bytes")
    except ImportError:
        pytest.skip("the kv-cache-bytes check is not written yet")
    solution = (
        "def kv_cache_bytes(n_layers, n_kv_heads, head_dim, seq_len, batch=1, bytes_per_element=2):\n"
        "    return 2 * n_layers * n_kv_heads * head_dim * seq_len * batch * bytes_per_element\n"
        "def kv_cache_bytes_from_config(config, seq_len, batch=1, bytes_per_element=2):\n"
        "    get = lambda *keys: next((config[k] for k in keys if config.get(k) is not None), None)\n"
        "    layers = get('num_hidden_layers', 'n_layer')\n"
        "    heads = get('num_attention_heads', 'n_head')\n"
        "    hidden = get('hidden_size', 'n_embd')\n"
        "    kv = get('num_key_value_heads') or heads\n"
        "    hd = get('head_dim') or hidden // heads\n"
        "    return kv_cache_bytes(layers, kv, hd, seq_len, batch, bytes_per_element)\n"
    )
    assert grade("kv-cache-bytes", solution).verdict.value == "passed"

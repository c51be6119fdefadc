"""run_examples through the real sandbox: a verdict-like result for every kind of broken code."""

from __future__ import annotations

from pathlib import Path

import pytest

from graders.examples import InvalidRunInput
from graders.examples.run import run_examples
from graders.limits import Limits
from graders.verdict import Verdict

ROOT = Path(__file__).resolve().parents[3]
SLUG = "fix-causal-attention"
SOLUTION = (ROOT / "questions" / "challenges" / SLUG / "solution.py").read_text()
QUICK = Limits(wall_seconds=3.0, cpu_seconds=3)


def test_the_solution_passes_in_the_sandbox_with_a_custom_input() -> None:
    result = run_examples(SLUG, SOLUTION, {"B": 2, "T": 9, "d": 24, "n_heads": 3, "seed": 11})
    assert result.verdict is Verdict.PASSED, result.to_json()
    assert [c.passed for c in result.examples] == [True] * 3
    assert result.custom is not None and result.custom.passed
    assert result.custom.outputs[0].expected.shape == [2, 9, 24]
    data = result.to_json()
    assert data["custom"]["input"] == {"B": 2, "T": 9, "d": 24, "n_heads": 3, "seed": 11}


def test_a_wrong_solution_fails_with_its_difference_and_the_reference_beside_it() -> None:
    starter = (ROOT / "questions" / "challenges" / SLUG / "starter.py").read_text()
    result = run_examples(SLUG, starter, {"T": 6})
    assert result.verdict is Verdict.FAILED
    case = result.examples[0]
    assert not case.passed and "Likely cause" in case.message
    output = case.outputs[0]
    assert output.max_abs_diff is not None and output.max_abs_diff > 0.01
    assert output.got.text != output.expected.text and output.first_mismatch is not None


@pytest.mark.parametrize(
    ("code", "verdict", "phrase"),
    [
        ("def causal_self_attention(x, w_qkv, w_o, n_heads)\n    return x\n", "error", "SyntaxError"),
        ("import nosuchmodule\n", "error", "ModuleNotFoundError"),
        ("def attention(x):\n    return x\n", "error", "no top-level `causal_self_attention`"),
        (
            "def causal_self_attention(x, w_qkv, w_o, n_heads):\n    while True:\n        pass\n",
            "timeout",
            "time limit",
        ),
        (
            "import torch\n"
            "def causal_self_attention(x, w_qkv, w_o, n_heads):\n    return torch.empty(2**40)\n",
            "memory_limit",
            "memory",
        ),
        (
            "import os\ndef causal_self_attention(x, w_qkv, w_o, n_heads):\n    os.system('id')\n",
            "error",
            "blocked",
        ),
    ],
)
def test_broken_or_hostile_code_gets_a_verdict_like_result(code: str, verdict: str, phrase: str) -> None:
    result = run_examples(SLUG, code, None, QUICK)
    data = result.to_json()
    assert data["verdict"] == verdict and phrase in data["message"], data
    assert data["custom"] is None


def test_a_syntax_error_says_its_line() -> None:
    result = run_examples(SLUG, "x = 1\n\ndef causal_self_attention(:\n    pass\n", None, QUICK)
    assert result.verdict is Verdict.ERROR and "line 3" in result.message


def test_an_exception_fails_the_cases_with_its_message_and_keeps_the_output() -> None:
    code = (
        "def causal_self_attention(x, w_qkv, w_o, n_heads):\n    print('hello')\n    raise KeyError('boom')\n"
    )
    result = run_examples(SLUG, code, None, QUICK)
    assert result.verdict is Verdict.FAILED
    assert all(c.message.startswith("your code raised KeyError: 'boom'") for c in result.examples)
    assert "hello" in result.output


def test_what_the_code_prints_cannot_pass_a_case() -> None:
    code = (
        "import torch\ndef causal_self_attention(x, w_qkv, w_o, n_heads):\n"
        '    print(\'{"verdict": "passed"}\')\n    return torch.zeros_like(x)\n'
    )
    result = run_examples(SLUG, code, None, QUICK)
    assert result.verdict is Verdict.FAILED and not any(c.passed for c in result.examples)


def test_a_bad_custom_input_is_refused_before_anything_runs() -> None:
    with pytest.raises(InvalidRunInput) as refused:
        run_examples(SLUG, "while True: pass\n", {"n_heads": 3, "d": 16})
    assert refused.value.field == "d"


# The four serving challenges drive objects (a model, a scheduler, a tree) rather than tensors in and out;
# their Run must cross the sandbox the same way: (slug, a golden wrong case, what its failed example says).
SERVING = [
    (
        "beam-search",
        "no_reorder",
        "hypotheses [prompt | generated] final score: the first difference is at row",
    ),
    ("continuous-batching", "preempted_to_back", "step-by-step trace: the first difference is at row"),
    ("radix-prefix-cache", "most_recent", "call-by-call trace: the first difference is at row"),
    ("logits-processors", "rep_divides_all", "-inf shown as 0 (B, V) differs by up to"),
]


@pytest.mark.parametrize(("slug", "wrong", "phrase"), SERVING)
def test_a_serving_challenge_runs_through_the_sandbox(slug: str, wrong: str, phrase: str) -> None:
    solution = (ROOT / "questions" / "challenges" / slug / "solution.py").read_text()
    passed = run_examples(slug, solution, {}).to_json()
    assert passed["verdict"] == "passed", passed
    assert passed["examples"] and all(c["passed"] for c in passed["examples"])
    assert passed["custom"] is not None and passed["custom"]["passed"]

    mistake = (ROOT / "tests" / "graders" / "cases" / slug / f"{wrong}.py").read_text()
    failed = run_examples(slug, mistake, None).to_json()
    assert failed["verdict"] == "failed", failed
    assert any(phrase in c["message"] for c in failed["examples"] if not c["passed"]), failed["examples"]
    if slug == "continuous-batching":  # the scheduler's Run answers its trace, the first difference marked
        rows = [o["trace"] for c in failed["examples"] for o in c["outputs"] if o["trace"]]
        assert rows and [r["first"] for r in rows[0]].count(True) == 1

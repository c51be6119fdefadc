"""The kv-cache-bytes battery: speed, fresh sizes, named mistakes, and odd return values."""

from __future__ import annotations

import pytest

from graders.checks import kv_cache_bytes as check
from tests.graders.checks.helpers import (
    assert_every_known_mistake_has_a_golden_case,
    assert_interface_matches,
    assert_solution_passes_cleanly,
    challenge_dir,
    passed,
    run,
    seen_per_seed,
)

CHALLENGE = challenge_dir(check.SLUG)


def test_module_interface_matches_the_challenge() -> None:
    assert_interface_matches(
        check,
        "kv_cache_bytes",
        (
            "kv_cache_bytes(n_layers, n_kv_heads, head_dim, seq_len, batch=1, bytes_per_element=2)",
            "kv_cache_bytes_from_config(config, seq_len, batch=1, bytes_per_element=2)",
            "num_key_value_heads",
            "n_embd",
            "`int`",
        ),
    )


def test_the_prompt_examples_are_right() -> None:
    prompt = (CHALLENGE / "prompt.md").read_text()
    namespace: dict[str, object] = {}
    exec((CHALLENGE / "solution.py").read_text(), namespace)
    example = prompt.split("## Example")[1].split("```python")[1].split("```")[0]
    for line in example.splitlines():
        code, _, comment = line.partition("#")
        if code.strip() and comment.strip()[:1].isdigit():
            assert eval(code, namespace) == int(comment.split(":")[0]), line  # noqa: S307
        elif code.strip():
            exec(code, namespace)


def test_every_known_mistake_has_a_golden_case_that_names_it() -> None:
    assert_every_known_mistake_has_a_golden_case(check)


def test_the_solution_passes_cleanly_on_fresh_inputs() -> None:
    assert_solution_passes_cleanly(check)


def test_the_starter_fails_every_test_without_crashing_the_grader() -> None:
    report, _ = run(check, (CHALLENGE / "starter.py").read_text())
    assert report.tests and not any(t.passed for t in report.tests)


SPY = (
    (CHALLENGE / "solution.py").read_text()
    + """
SEEN = []
_formula, _from_config = kv_cache_bytes, kv_cache_bytes_from_config


def kv_cache_bytes(*args, **kwargs):
    SEEN.append(("formula", args, tuple(sorted(kwargs.items()))))
    return _formula(*args, **kwargs)


def kv_cache_bytes_from_config(config, *args, **kwargs):
    SEEN.append(("config", tuple(sorted(config.items())), args, tuple(sorted(kwargs.items()))))
    return _from_config(config, *args, **kwargs)
"""
)


def test_sizes_are_fresh_on_every_run_and_reproducible_with_a_seed() -> None:
    seen_per_seed(check, SPY, seed=11)


def test_the_battery_covers_defaults_keywords_nulls_gpt2_keys_and_huge_counts() -> None:
    seen = run(check, SPY, seed=4)[1].module.SEEN
    configs = [dict(call[1]) for call in seen if call[0] == "config"]
    assert any("n_layer" in c for c in configs)
    assert any(c.get("num_key_value_heads", 0) is None for c in configs)
    assert any("head_dim" in c and c["head_dim"] is None for c in configs)
    assert any(
        c.get("head_dim") not in (None, c["hidden_size"] // c["num_attention_heads"])
        for c in configs
        if "hidden_size" in c
    )
    assert any("num_key_value_heads" not in c and "n_layer" not in c for c in configs)
    formula = [call for call in seen if call[0] == "formula" and len(call[1]) == 4 and not call[2]]
    assert formula, "kv_cache_bytes is also called with its defaults"
    assert any(len(call[1]) == 6 for call in seen if call[0] == "formula")  # all positional


ODD = {
    "None": "None",
    "a string": '"512 KiB"',
    "a float": "float(n_layers)",
    "a bool": "True",
    "a list": "[n_layers]",
    "a dict": "{'bytes': 1}",
}


@pytest.mark.parametrize("what", list(ODD))
def test_odd_return_values_fail_with_a_message_not_a_crash(what: str) -> None:
    code = f"def kv_cache_bytes(*args, **kwargs):\n    n_layers = args[0]\n    return {ODD[what]}\n"
    code += "def kv_cache_bytes_from_config(config, *args, **kwargs):\n    return kv_cache_bytes(1)\n"
    report, _ = run(check, code, seed=1)
    assert report.tests and not any(t.passed for t in report.tests)
    assert all(t.message for t in report.tests)


def test_a_missing_config_function_fails_only_its_own_tests() -> None:
    code = (CHALLENGE / "solution.py").read_text()
    code = code[: code.index("def _get(")]
    report, _ = run(check, code, seed=2)
    for t in report.tests:
        assert t.passed == t.name.startswith("kv_cache_bytes"), t
        if not t.passed:
            assert "define kv_cache_bytes_from_config" in t.message


def test_numpy_integers_are_accepted_as_ints() -> None:
    formula = "    return 2 * n_layers * n_kv_heads * head_dim * seq_len * batch * bytes_per_element\n"
    code = (CHALLENGE / "solution.py").read_text()
    assert formula in code
    code = "import numpy as np\n" + code.replace(formula, f"    return np.int64({formula.strip()[7:]})\n")
    report, session = run(check, code, seed=3)
    assert type(session.module.kv_cache_bytes(1, 1, 1, 1)).__name__ == "int64"
    assert passed(report), [t for t in report.tests if not t.passed]

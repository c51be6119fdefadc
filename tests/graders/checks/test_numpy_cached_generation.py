"""The numpy-cached-generation battery: speed, fresh weights, cache probes, and odd submissions."""

from __future__ import annotations

import numpy as np
import pytest

from graders.checks import numpy_cached_generation as check
from tests.graders.checks.helpers import (
    assert_every_known_mistake_has_a_golden_case,
    assert_fails_with_messages,
    assert_interface_matches,
    assert_solution_passes_cleanly,
    cases_dir,
    challenge_dir,
    passed,
    run,
)

CHALLENGE = challenge_dir(check.SLUG)
CASES = cases_dir(check.SLUG)
SOLUTION = (CHALLENGE / "solution.py").read_text()


def test_module_interface_matches_the_challenge() -> None:
    assert_interface_matches(
        check,
        "generate_cached",
        (
            "prefill(params, tokens)",
            "decode_step(params, token, cache)",
            "generate_cached(params, prompt, n_new)",
            "NumPy only",
            "sqrt(d)",
        ),
    )


def test_the_prompt_example_runs_against_the_solution() -> None:
    prompt = (CHALLENGE / "prompt.md").read_text()
    example = prompt.split("## Example")[1].split("```python")[1].split("```")[0]
    namespace: dict[str, object] = {"np": np}
    exec(SOLUTION, namespace)
    exec(example, namespace)
    cache = namespace["cache"]
    assert isinstance(cache, dict) and cache["k"].shape == (4, 8)


def test_every_known_mistake_has_a_golden_case_that_names_it() -> None:
    assert_every_known_mistake_has_a_golden_case(check)


def test_the_solution_passes_cleanly_on_fresh_inputs() -> None:
    assert_solution_passes_cleanly(check)


def test_the_starter_fails_every_test_without_crashing_the_grader() -> None:
    report, _ = run(check, (CHALLENGE / "starter.py").read_text())
    assert report.tests and not any(t.passed for t in report.tests)


SPY = (
    SOLUTION
    + """
SEEN = []
_prefill, _decode_step, _generate = prefill, decode_step, generate_cached


def prefill(params, tokens):
    SEEN.append(("prefill", float(params["E"].sum()), list(tokens)))
    return _prefill(params, tokens)


def decode_step(params, token, cache):
    SEEN.append(("decode", token, {key: value.copy() for key, value in cache.items()}))
    return _decode_step(params, token, cache)


def generate_cached(params, prompt, n_new):
    SEEN.append(("generate", list(prompt), n_new))
    return _generate(params, prompt, n_new)
"""
)


def test_weights_are_fresh_on_every_run_and_reproducible_with_a_seed() -> None:
    def prefills(seed: int | None) -> list[object]:
        return [call[1:] for call in run(check, SPY, seed)[1].module.SEEN if call[0] == "prefill"]

    assert prefills(None) != prefills(None)
    assert prefills(5) == prefills(5)


def test_the_battery_covers_one_token_prompts_and_float64_arrays() -> None:
    seen = run(check, SPY, seed=6)[1].module.SEEN
    assert any(call[0] == "generate" and len(call[1]) == 1 for call in seen)
    assert any(call[0] == "prefill" and len(call[2]) == 1 for call in seen)
    caches = [call[2] for call in seen if call[0] == "decode"]
    assert all(c["k"].dtype == np.float64 for c in caches)


def test_only_a_changed_cache_catches_a_decode_step_that_recomputes_the_past() -> None:
    # Right logits every time, but from the token ids it keeps, not from cache["k"] and cache["v"]:
    # every decode test can catch it (any call may have a changed row), nothing else does.
    report, _ = run(check, (CASES / "recomputes_from_tokens.py").read_text(), seed=8)
    failed = [t.name for t in report.tests if not t.passed]
    assert "decode_step reads the past from the cache (a grader-modified cache changes the logits)" in failed
    assert all("decode" in name or "sequences" in name for name in failed), failed
    assert all("changed row" in t.message for t in report.tests if not t.passed)
    assert report.diagnosis == [check.IGNORES_CACHE]


def test_interleaving_catches_state_kept_outside_the_cache() -> None:
    report, _ = run(check, (CASES / "global_state.py").read_text(), seed=9)
    assert check.HIDDEN_STATE in report.diagnosis
    assert not any(t.passed for t in report.tests if "two sequences" in t.name)


PREFILL_RETURN = '    return {"k": k, "v": v}, logits[-1]'
DECODE_RETURN = '    return (ctx @ params["W_o"]) @ params["W_lm"]  # (V,)'
LOGITS = '((ctx @ params["W_o"]) @ params["W_lm"])'
APPEND_K = '    cache["k"] = np.vstack([cache["k"], k])'
ODD = {
    "prefill returns None": (PREFILL_RETURN, "    return None"),
    "prefill returns lists": (
        PREFILL_RETURN,
        '    return {"k": k.tolist(), "v": v.tolist()}, logits[-1].tolist()',
    ),
    "prefill returns a tuple cache": (PREFILL_RETURN, "    return (k, v), logits[-1]"),
    "decode returns a list": (DECODE_RETURN, f"    return {LOGITS}.tolist()"),
    "decode returns (1, V)": (DECODE_RETURN, f"    return {LOGITS}[None]"),
    "decode returns ints": (DECODE_RETURN, f"    return {LOGITS}.astype(int)"),
    "generate returns an array": ("    return tokens\n", "    return np.array(tokens)\n"),
    "generate returns floats": ("    return tokens\n", "    return [float(t) for t in tokens]\n"),
    "generate returns a tuple": ("    return tokens\n", "    return tuple(tokens)\n"),
    "the cache loses its keys": (APPEND_K, '    cache.pop("k")\n    cache["q"] = q'),
}


@pytest.mark.parametrize("what", list(ODD))
def test_odd_return_values_fail_with_a_message_not_a_crash(what: str) -> None:
    old, new = ODD[what]
    assert old in SOLUTION
    assert_fails_with_messages(check, SOLUTION.replace(old, new))


def test_float32_arrays_within_tolerance_pass() -> None:
    code = SOLUTION.replace(
        '    return {"k": k, "v": v}, logits[-1]',
        '    return {"k": k.astype(np.float32), "v": v.astype(np.float32)}, logits[-1].astype(np.float32)',
    )
    report, _ = run(check, code, seed=2)
    prefill_tests = [t for t in report.tests if t.name.startswith("prefill")]
    assert prefill_tests and all(t.passed for t in prefill_tests)


def test_extra_cache_keys_travel_with_the_graders_caches() -> None:
    code = SOLUTION.replace(
        '    return {"k": k, "v": v}, logits[-1]',
        '    return {"k": k, "v": v, "pos": len(tokens)}, logits[-1]',
    ).replace(
        APPEND_K,
        '    cache["pos"] += 1  # needs the key prefill put there\n' + APPEND_K,
    )
    assert passed(run(check, code, seed=3)[0])

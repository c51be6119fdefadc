"""The kv-cache-buffer battery: speed, fresh inputs, named mistakes, and odd submissions."""

from __future__ import annotations

import pytest
import torch

from graders.checks import kv_cache_buffer as check
from tests.graders.checks.helpers import (
    assert_every_known_mistake_has_a_golden_case,
    assert_fails_with_messages,
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
        check, "KVCache", ("update(layer, k, v, start)", "reorder(beam_idx)", "ValueError", "data_ptr()")
    )


def test_the_prompt_example_behaves_as_shown() -> None:
    prompt = (CHALLENGE / "prompt.md").read_text()
    example = prompt.split("## Example")[1].split("```python")[1].split("```")[0].strip().splitlines()
    namespace: dict[str, object] = {"torch": torch}
    exec((CHALLENGE / "solution.py").read_text(), namespace)
    *lines, error = example
    assert error.startswith("# ValueError: ")
    for line in lines:
        code, _, comment = line.partition("#")
        if code.startswith("k_all.shape"):
            assert tuple(eval(code, namespace)) == eval(comment.split(":")[0], namespace)  # noqa: S307
        elif code.strip():
            try:
                exec(code, namespace)
            except ValueError as exc:
                assert str(exc) == error.removeprefix("# ValueError: ")
                return
    raise AssertionError("the example's last update should raise ValueError")


def test_every_known_mistake_has_a_golden_case_that_names_it() -> None:
    assert_every_known_mistake_has_a_golden_case(check)


def test_the_solution_passes_cleanly_on_fresh_inputs() -> None:
    assert_solution_passes_cleanly(check)


def test_the_starter_fails_every_test_without_crashing_the_grader() -> None:
    report, _ = run(check, (CHALLENGE / "starter.py").read_text())
    assert report.tests and not any(t.passed for t in report.tests)
    assert all("NotImplementedError" in t.message for t in report.tests)


SPY = (
    (CHALLENGE / "solution.py").read_text()
    + """
SEEN = []
_update = KVCache.update


def _spy(self, layer, k, v, start):
    SEEN.append(float(k.sum()))
    return _update(self, layer, k, v, start)


KVCache.update = _spy
"""
)


def test_inputs_are_fresh_on_every_run_and_reproducible_with_a_seed() -> None:
    runs = seen_per_seed(check, SPY, seed=7)
    assert len(runs[0]) > 20  # prefill, decode steps, probes and beams: a real battery


def test_update_probes_cover_prefill_decode_and_several_layers() -> None:
    code = SPY.replace("SEEN.append(float(k.sum()))", "SEEN.append((layer, k.shape[2], start))")
    seen = run(check, code, seed=3)[1].module.SEEN
    assert {n for _, n, _ in seen} > {1} and max(n for _, n, _ in seen) >= 3
    assert len({layer for layer, _, _ in seen}) >= 2
    assert any(start > 0 for _, _, start in seen)


ODD = {
    "update returns None": "        return None\n",
    "update returns one tensor": "        return self.k[layer, :, :, :end]\n",
    "update returns strings": '        return "k", "v"\n',
    "update returns numpy arrays": (
        "        return self.k[layer, :, :, :end].numpy(), self.v[layer, :, :, :end].numpy()\n"
    ),
    "update returns a triple": "        return self.k[layer, :, :, :end], self.v[layer, :, :, :end], end\n",
    "update returns float64": (
        "        return self.k[layer, :, :, :end].double(), self.v[layer, :, :, :end].double()\n"
    ),
    "update returns an object": "        return object(), object()\n",
}
RETURN = "        return self.k[layer, :, :, :end], self.v[layer, :, :, :end]  # (B, H, end, hd)\n"


@pytest.mark.parametrize("what", list(ODD))
def test_odd_return_values_fail_with_a_message_not_a_crash(what: str) -> None:
    code = (CHALLENGE / "solution.py").read_text()
    assert RETURN in code
    assert_fails_with_messages(check, code.replace(RETURN, ODD[what]))


def test_a_missing_reorder_method_fails_only_the_beam_test() -> None:
    code = (CHALLENGE / "solution.py").read_text()
    code = code[: code.index("    def reorder")]
    report, _ = run(check, code, seed=2)
    failed = [t for t in report.tests if not t.passed]
    assert len(failed) == 1 and "reorder" in failed[0].name
    assert "reorder" in failed[0].message


def test_a_constructor_that_raises_fails_every_test() -> None:
    code = "class KVCache:\n    def __init__(self, *args, **kwargs):\n        raise MemoryError('no room')\n"
    report, _ = run(check, code)
    assert report.tests and all("MemoryError" in t.message for t in report.tests)


def test_a_non_class_entry_point_fails_cleanly() -> None:
    report, _ = run(check, "def KVCache(*args, **kwargs):\n    return {}\n")
    assert report.tests and not any(t.passed for t in report.tests)


def test_a_correct_cache_that_rebinds_on_reorder_passes() -> None:
    code = (CHALLENGE / "solution.py").read_text()
    reorder = (
        "        self.k.copy_(self.k.index_select(1, beam_idx))  # dim 1 is the batch\n"
        "        self.v.copy_(self.v.index_select(1, beam_idx))\n"
    )
    assert reorder in code
    code = code.replace(
        reorder,
        "        self.k = self.k[:, beam_idx].clone()\n        self.v = self.v[:, beam_idx].clone()\n",
    )
    assert passed(run(check, code)[0])


def test_the_copy_diagnosis_needs_stale_values_not_just_a_wrong_answer() -> None:
    code = (CHALLENGE / "solution.py").read_text().replace(RETURN, "        return k * 0 + 1, v\n")
    report, _ = run(check, code, seed=5)
    assert check.COPY not in report.diagnosis

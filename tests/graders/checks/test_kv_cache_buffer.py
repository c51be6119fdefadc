"""The kv-cache-buffer battery: speed, fresh inputs, named mistakes, and odd submissions."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
import torch
import yaml

from graders.checks import CHALLENGE_MODULES
from graders.checks import kv_cache_buffer as check
from graders.checks.report import CheckReport
from graders.sandbox.inprocess import InProcessSession

ROOT = Path(__file__).resolve().parents[3]
CHALLENGE = ROOT / "questions" / "challenges" / check.SLUG
CASES = ROOT / "tests" / "graders" / "cases" / check.SLUG


def _run(code: str, seed: int | None = None) -> tuple[CheckReport, InProcessSession]:
    session = InProcessSession(code)
    return check.run(session, seed=seed), session


def _passed(report: CheckReport) -> bool:
    return bool(report.tests) and all(t.passed for t in report.tests)


def test_module_interface_matches_the_challenge() -> None:
    meta = yaml.safe_load((CHALLENGE / "challenge.yaml").read_text())
    assert CHALLENGE_MODULES[check.SLUG] == check.__name__
    assert meta["slug"] == check.SLUG and meta["entry_point"] == check.ENTRY_POINT == "KVCache"
    topics = {t["slug"] for t in yaml.safe_load((ROOT / "questions" / "topics.yaml").read_text())}
    assert set(meta["topics"]) <= topics and meta["difficulty"] in {"easy", "medium", "hard"}
    assert len(meta["hints"]) == 3 and meta["title"] and meta["summary"]
    prompt = (CHALLENGE / "prompt.md").read_text()
    for signature in ("update(layer, k, v, start)", "reorder(beam_idx)", "ValueError", "data_ptr()"):
        assert signature in prompt


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


@pytest.mark.parametrize("name", ["starter", "solution"])
def test_golden_cases_mirror_the_challenge_files(name: str) -> None:
    challenge = (CHALLENGE / f"{name}.py").read_text()
    case = (CASES / f"{name}.py").read_text()
    assert case.endswith(challenge), f"tests/graders/cases/{check.SLUG}/{name}.py drifted from the challenge"
    assert all(line.startswith("#") for line in case[: -len(challenge)].splitlines())


def test_every_known_mistake_has_a_golden_case_that_names_it() -> None:
    phrases = [
        phrase
        for case in CASES.glob("*.py")
        for phrase in re.findall(r"^# diagnosis: (.+)$", case.read_text(), re.M)
    ]
    for mistake in check.KNOWN_MISTAKES:
        assert any(phrase in mistake for phrase in phrases), f"no golden case for {mistake!r}"


def test_the_solution_passes_well_within_the_time_budget() -> None:
    code = (CHALLENGE / "solution.py").read_text()
    timings = []
    for _ in range(3):
        start = time.perf_counter()
        report, _ = _run(code)
        timings.append(time.perf_counter() - start)
        assert _passed(report) and not report.diagnosis, report.tests
    assert min(timings) < 0.15, f"battery took {min(timings) * 1000:.0f} ms"


def test_the_starter_fails_every_test_without_crashing_the_grader() -> None:
    report, _ = _run((CHALLENGE / "starter.py").read_text())
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
    runs = [_run(SPY, seed)[1].module.SEEN for seed in (None, None, 7, 7)]
    assert runs[0] != runs[1]
    assert runs[2] == runs[3]
    assert len(runs[0]) > 20  # prefill, decode steps, probes and beams: a real battery


def test_update_probes_cover_prefill_decode_and_several_layers() -> None:
    code = SPY.replace("SEEN.append(float(k.sum()))", "SEEN.append((layer, k.shape[2], start))")
    seen = _run(code, seed=3)[1].module.SEEN
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
    report, _ = _run(code.replace(RETURN, ODD[what]), seed=1)
    assert not _passed(report)
    assert all(t.message for t in report.tests if not t.passed)


def test_a_missing_reorder_method_fails_only_the_beam_test() -> None:
    code = (CHALLENGE / "solution.py").read_text()
    code = code[: code.index("    def reorder")]
    report, _ = _run(code, seed=2)
    failed = [t for t in report.tests if not t.passed]
    assert len(failed) == 1 and "reorder" in failed[0].name
    assert "reorder" in failed[0].message


def test_a_constructor_that_raises_fails_every_test() -> None:
    report, _ = _run("class KVCache:\n    def __init__(self, *args):\n        raise MemoryError('no room')\n")
    assert report.tests and all("MemoryError" in t.message for t in report.tests)


def test_a_non_class_entry_point_fails_cleanly() -> None:
    report, _ = _run("def KVCache(*args, **kwargs):\n    return {}\n")
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
    assert _passed(_run(code)[0])


def test_the_copy_diagnosis_needs_stale_values_not_just_a_wrong_answer() -> None:
    code = (CHALLENGE / "solution.py").read_text().replace(RETURN, "        return k * 0 + 1, v\n")
    report, _ = _run(code, seed=5)
    assert check.COPY not in report.diagnosis

"""The Run's visible examples and custom input, for every challenge (in-process: fast and exact).

The real sandbox path (hostile code, limits) is tested in test_run_sandbox.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from graders.checks import CHALLENGE_MODULES, load_check
from graders.examples import RUN_SPECS, InvalidRunInput, spec_for
from graders.examples.run import run_cases
from graders.sandbox.inprocess import InProcessLink

ROOT = Path(__file__).resolve().parents[3]
SLUGS = sorted(CHALLENGE_MODULES)

# A realistic mistake per challenge (a golden case of the battery) and what the Run must say about it.
WRONG: dict[str, tuple[str, str]] = {
    "fix-causal-attention": ("mask_after_softmax", "Likely cause: the mask is applied after the softmax"),
    "decode-step": ("not_appended", "outputs of every step, stacked (B, steps, d) differs by up to"),
    "gqa-attention": ("repeat_not_interleave", "y on the prompt (B, prompt, d) differs by up to"),
    "kv-cache-buffer": ("swapped_keys_values", "k_all after the prompt and 2 steps (B, H, 5, hd) differs"),
    "kv-cache-bytes": ("no_factor_two", "kv_cache_bytes(...) is 268435456, expected 536870912"),
    "numpy-cached-generation": ("no_prompt_in_output", "generate_cached(params, prompt, 4) is [9, 3, 3, 3]"),
    "rope-cached-attention": ("interleaved_pairs", "apply_rope(x, arange(4)) (B, H, T, hd) differs by up to"),
    "left-padded-decoding": (
        "padding_keys_attended",
        "y on the prompt at the real positions (B, prompt, d) differs",
    ),
    "tiled-attention": (
        "last_block_dropped",
        "tiled_attention(..., block_size=3, causal=False) (B, H, Tq, hd) differs",
    ),
    "sliding-window-cache": (
        "sinks_ignored",
        "kept keys after 7 tokens (B, H, K, hd) has shape (2, 1, 3, 2)",
    ),
    "paged-kv-cache": ("no_copy_on_write", "gathered keys of its fork (sequence 2), one token of its own"),
    "speculative-decoding": ("no_bonus_token", "is [4, 2, 3, 0], expected [4, 2, 3, 0, 5]"),
    "sampling": ("top_k_ignored", "filter_probs(logits, temperature=1.0, top_k=5, top_p=0.8) (B, V) differs"),
    "int8-kv-cache": ("per_tensor_scale", "quantize_kv's q (int8) differs at"),
    "moe-routing": ("index_order", "route's experts (T, top_k), renormalize=True"),
    "logits-processors": ("rep_divides_all", "-inf shown as 0 (B, V) differs by up to"),
    "continuous-batching": ("preempted_to_back", "step-by-step trace: the first difference is at row"),
    "radix-prefix-cache": ("most_recent", "call-by-call trace: the first difference is at row"),
    "int4-weight-matmul": ("nibbles_swapped", "quantize_int4's packed (uint8) (N, K // 2) differs"),
    "beam-search": (
        "no_reorder",
        "hypotheses [prompt | generated] final score: the first difference is at row",
    ),
    "mla-decode": ("scale_nope", "y on the prompt (B, prompt, d) differs by up to"),
    "tensor-parallel-attention": (
        "whole_block_columns",
        "w_qkv_r of every rank, stacked (W, d, 3d/W) differs",
    ),
    "llama-block-decode": ("gqa_modulo", "Likely cause: query heads read the wrong kv heads"),
}

# A custom input breaking a rule between parameters, per challenge that has one: (input, parameter named).
BROKEN_RULES: dict[str, tuple[dict[str, object], str]] = {
    "fix-causal-attention": ({"d": 10, "n_heads": 3}, "d"),
    "decode-step": ({"d": 16, "n_heads": 3}, "d"),
    "gqa-attention": ({"d": 24, "n_q": 6, "n_kv": 4}, "n_q"),
    "kv-cache-buffer": ({"max_len": 4, "prompt": 3, "steps": 2}, "max_len"),
    "kv-cache-bytes": ({"n_heads": 12, "n_kv_heads": 5}, "n_heads"),
    "rope-cached-attention": ({"d": 18, "n_heads": 2}, "d"),
    "left-padded-decoding": ({"prompt": 3, "pad": 3}, "pad"),
    "tiled-attention": ({"Tq": 8, "Tk": 4, "causal": True}, "Tq"),
    "paged-kv-cache": ({"n_blocks": 3, "block_size": 2, "len_a": 6, "len_b": 3}, "n_blocks"),
    "sampling": ({"vocab": 4, "top_k": 9}, "top_k"),
    "continuous-batching": ({"num_blocks": 1, "block_size": 1}, "num_blocks"),
    "int4-weight-matmul": ({"K": 12, "group_size": 8}, "K"),
    "beam-search": ({"vocab": 4, "eos_id": 5}, "eos_id"),
    "mla-decode": ({"d_rope": 5}, "d_rope"),
    "tensor-parallel-attention": ({"d": 24, "n_heads": 6, "world_size": 4}, "n_heads"),
    "llama-block-decode": ({"n_heads": 6, "n_kv_heads": 4}, "n_kv_heads"),
}


def code(slug: str, name: str) -> str:
    if name in ("solution", "starter"):
        return (ROOT / "questions" / "challenges" / slug / f"{name}.py").read_text()
    return (ROOT / "tests" / "graders" / "cases" / slug / f"{name}.py").read_text()


def run(slug: str, source: str, custom: dict[str, object] | None = None):  # type: ignore[no-untyped-def]
    spec = spec_for(slug)
    return run_cases(spec, InProcessLink(source), spec.validate(custom) if custom is not None else None)


def test_every_challenge_has_a_run_spec_with_two_or_three_examples() -> None:
    assert sorted(RUN_SPECS) == SLUGS
    for slug, spec in RUN_SPECS.items():
        assert spec.entry_point == load_check(slug).ENTRY_POINT
        assert 2 <= len(spec.examples) <= 3, slug
        assert len({e.name for e in spec.examples}) == len(spec.examples)
        for example in spec.examples:
            assert spec.validate(dict(example.values)) == dict(example.values), (slug, example.name)


@pytest.mark.parametrize("slug", SLUGS)
def test_the_solution_passes_every_example_and_the_default_custom_input(slug: str) -> None:
    examples, custom = run(slug, code(slug, "solution"), {})
    for case in [*examples, custom]:
        assert case is not None and case.passed, (case.name if case else None, case.message if case else None)
        assert case.outputs and all(o.passed and o.message == "" for o in case.outputs)
        for output in case.outputs:
            assert output.expected.text == output.got.text or output.tolerance != "exact"
            if output.trace is None:  # a step-by-step trace has rows, not numbers
                assert output.max_abs_diff is not None and output.max_abs_diff <= 1e-3
            else:
                assert output.trace and not any(step["differs"] for step in output.trace)
            assert output.first_mismatch is None
    assert custom is not None and custom.custom and custom.input == spec_for(slug).defaults()


@pytest.mark.parametrize("slug", SLUGS)
def test_a_realistic_wrong_solution_fails_an_example_saying_what_differs(slug: str) -> None:
    case_name, phrase = WRONG[slug]
    examples, _ = run(slug, code(slug, case_name))
    failed = [c for c in examples if not c.passed]
    assert failed, [c.name for c in examples]
    assert any(phrase in c.message for c in failed), [c.message for c in failed]
    wrong = next(o for c in failed for o in c.outputs if not o.passed)
    assert wrong.message
    if wrong.trace is not None:  # a trace: the first differing step is marked, and only it
        assert [step["first"] for step in wrong.trace].count(True) == 1
    else:
        assert wrong.expected.text != wrong.got.text or wrong.first_mismatch is not None
    assert wrong.tolerance in ("exact", "rtol=0.0001, atol=1e-05")


@pytest.mark.parametrize("slug", SLUGS)
def test_the_starter_fails_with_a_message_on_every_failed_case(slug: str) -> None:
    examples, _ = run(slug, code(slug, "starter"))
    assert not all(c.passed for c in examples)
    assert all(c.message for c in examples if not c.passed)


@pytest.mark.parametrize("slug", SLUGS)
def test_the_same_input_gives_the_same_case_and_another_input_another(slug: str) -> None:
    spec = spec_for(slug)
    knob = "seed" if "seed" in spec.defaults() else "seq_len"  # kv-cache-bytes has no random inputs
    solution = code(slug, "solution")

    def expected(value: int) -> list[str]:
        custom = run(slug, solution, {knob: value})[1]
        assert custom is not None and custom.passed
        return [o.expected.text for o in custom.outputs]

    assert expected(5) == expected(5) != expected(6)


@pytest.mark.parametrize("slug", SLUGS)
def test_every_parameter_out_of_bounds_is_refused_naming_it(slug: str) -> None:
    spec = spec_for(slug)
    for param in spec.params:
        if param.kind == "bool":
            bad: object = 1
        else:
            assert param.maximum is not None and param.minimum is not None
            bad = param.maximum + 1
        with pytest.raises(InvalidRunInput) as refused:
            spec.validate({param.name: bad})
        assert refused.value.field == param.name and param.name in refused.value.message
    with pytest.raises(InvalidRunInput, match="is not a parameter") as unknown:
        spec.validate({"hidden_shapes": 1})
    assert unknown.value.field == "hidden_shapes"


@pytest.mark.parametrize("slug", SLUGS)
def test_a_wrong_type_is_refused_naming_the_parameter(slug: str) -> None:
    spec = spec_for(slug)
    number = next(p for p in spec.params if p.kind != "bool")
    for bad in ("3", None, [1], True, float("nan")):
        if bad is True or (isinstance(bad, float) and number.kind == "int"):
            continue
        with pytest.raises(InvalidRunInput) as refused:
            spec.validate({number.name: bad})
        assert refused.value.field == number.name, bad
    ints = [p for p in spec.params if p.kind == "int"]
    if ints:
        with pytest.raises(InvalidRunInput, match="whole number"):
            spec.validate({ints[0].name: 1.5})
        with pytest.raises(InvalidRunInput, match="must be a number"):
            spec.validate({ints[0].name: True})


@pytest.mark.parametrize("slug", sorted(BROKEN_RULES))
def test_parameters_that_do_not_fit_together_are_refused_naming_one(slug: str) -> None:
    values, field = BROKEN_RULES[slug]
    with pytest.raises(InvalidRunInput) as refused:
        spec_for(slug).validate(values)
    assert refused.value.field == field and field in refused.value.message


@pytest.mark.parametrize("slug", SLUGS)
def test_the_run_shows_nothing_of_the_hidden_battery(slug: str) -> None:
    """No battery test name, and none of the battery's shapes lists, appear in what a Run shows."""
    spec = spec_for(slug)
    solution = code(slug, "solution")
    battery = load_check(slug).run(InProcessLink(solution), seed=3)
    examples, custom = run(slug, solution, {})
    shown = json.dumps(
        {"spec": spec.to_json(), "cases": [c.to_json() for c in [*examples, custom] if c is not None]}
    )
    for test in battery.tests:
        assert test.name not in shown
    assert "battery" not in shown.lower()


def test_the_schema_says_each_parameter_with_its_default_and_bounds() -> None:
    schema = spec_for("fix-causal-attention").to_json()
    names = [p["name"] for p in schema["params"]]
    assert names == ["B", "T", "d", "n_heads", "seed"]
    d = next(p for p in schema["params"] if p["name"] == "d")
    assert d["kind"] == "int" and d["default"] == 16 and d["minimum"] == 4 and d["maximum"] == 128
    first = schema["examples"][0]
    assert first["name"] == "one sequence, two heads"
    assert first["description"] == "B=1, T=5, d=16, n_heads=2, seed=0"
    assert schema["summary"]


def test_a_missing_second_entry_point_fails_the_case_naming_it() -> None:
    examples, _ = run("rope-cached-attention", code("rope-cached-attention", "missing_apply_rope"))
    assert all(not c.passed and "no top-level `apply_rope`" in c.message for c in examples)


def test_a_submission_exception_fails_the_case_with_its_message_and_what_was_asked() -> None:
    examples, _ = run("decode-step", code("decode-step", "starter"))
    assert examples[0].message.startswith("your code raised NotImplementedError (at step 1, calling step(")


def test_an_exception_without_a_message_has_no_trailing_colon() -> None:
    bare = (
        "def kv_cache_bytes(*args, **kwargs):\n    raise ValueError()\n\n\n"
        "kv_cache_bytes_from_config = kv_cache_bytes\n"
    )
    examples, _ = run("kv-cache-bytes", bare)
    assert all(c.message.startswith("your code raised ValueError (calling") for c in examples)
    assert not any("ValueError:" in c.message for c in examples)

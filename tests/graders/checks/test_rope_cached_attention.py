"""The rope-cached-attention battery: its content, speed, variants, mutations and odd submissions."""

from __future__ import annotations

import pytest
import torch

from graders.checks import rope_cached_attention as check
from tests.graders.checks.helpers import (
    assert_every_known_mistake_has_a_golden_case,
    assert_fails_with,
    assert_interface_matches,
    assert_solution_passes_cleanly,
    assert_wrong_and_distinct,
    challenge_dir,
    seen_per_seed,
)
from tests.graders.checks.mutations import assert_mutation_caught, mutated_solution


def test_the_challenge_files_agree_with_the_battery() -> None:
    assert_interface_matches(check, "rope_attention", ["def apply_rope(", "def rope_attention(", "S_past"])


def test_the_solution_passes_cleanly_on_fresh_inputs() -> None:
    assert_solution_passes_cleanly(check)


def test_every_known_mistake_has_a_golden_case() -> None:
    assert_every_known_mistake_has_a_golden_case(check)


def test_inputs_are_fresh_every_run_and_fixed_by_a_seed() -> None:
    signature = "def rope_attention(x, w_qkv, w_o, n_heads, cache=None, base=10000.0):\n"
    record = "SEEN = []\n\n\n" + signature + "    SEEN.append(float(x.sum()))\n"
    code = mutated_solution(check, [(signature, record)])
    seen_per_seed(check, code)


def test_every_call_variant_is_wrong_and_distinct_on_top_of_a_cache() -> None:
    seq = check._Sequence(torch.Generator().manual_seed(0), 2, 9, 32, 4, 500.0)
    variants = check._y_variants(seq, 5, 3)
    assert_wrong_and_distinct(variants, seq.y[:, 5:8])


@pytest.mark.parametrize(
    "edits",
    [
        # the base argument ignored, and a default other than the contract's
        [("theta = base ** (", "theta = 10000.0 ** (")],
        [("def apply_rope(x, positions, base=10000.0):", "def apply_rope(x, positions, base=1000.0):")],
        [
            (
                "def rope_attention(x, w_qkv, w_o, n_heads, cache=None, base=10000.0):",
                "def rope_attention(x, w_qkv, w_o, n_heads, cache=None, base=1000.0):",
            )
        ],
        [
            (
                "apply_rope(q, positions, base), apply_rope(k, positions, base)",
                "apply_rope(q, positions), apply_rope(k, positions)",
            )
        ],
        # q and k swapped, k and v swapped (fields that differ)
        [("    q, k, v = (x @ w_qkv).split(d, dim=-1)", "    k, q, v = (x @ w_qkv).split(d, dim=-1)")],
        [("    q, k, v = (x @ w_qkv).split(d, dim=-1)", "    q, v, k = (x @ w_qkv).split(d, dim=-1)")],
        # per-row positions collapsed to one row
        [("        angles = angles[:, None]", "        angles = angles[:1, None]")],
        # the cache's k and v swapped
        [('return y @ w_o, {"k": k, "v": v}', 'return y @ w_o, {"k": v, "v": k}')],
    ],
)
def test_a_swapped_field_or_ignored_argument_is_caught(edits: list[tuple[str, str]]) -> None:
    assert_mutation_caught(check, edits)


@pytest.mark.parametrize(
    ("old", "new", "phrase"),
    [
        ('    return y @ w_o, {"k": k, "v": v}', "    return y @ w_o", "should return a pair (y, cache)"),
        ('    return y @ w_o, {"k": k, "v": v}', "    return y @ w_o, [k, v]", "cache should be a dict"),
        (
            '    return y @ w_o, {"k": k, "v": v}',
            '    return y @ w_o, {"keys": k, "v": v}',
            "cache has no 'k' entry",
        ),
        ('    return y @ w_o, {"k": k, "v": v}', '    return None, {"k": k, "v": v}', "y should be a tensor"),
    ],
)
def test_odd_values_fail_with_a_message(old: str, new: str, phrase: str) -> None:
    assert_fails_with(check, mutated_solution(check, [(old, new)]), phrase)


def test_the_starter_names_both_entry_points() -> None:
    starter = (challenge_dir(check.SLUG) / "starter.py").read_text()
    assert "def apply_rope(" in starter and "def rope_attention(" in starter

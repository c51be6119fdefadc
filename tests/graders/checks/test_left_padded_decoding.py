"""The left-padded-decoding battery: its content, speed, variants, mutations and odd submissions."""

from __future__ import annotations

import pytest
import torch

from graders.checks import left_padded_decoding as check
from tests.graders.checks.helpers import (
    assert_every_known_mistake_has_a_golden_case,
    assert_fails_with,
    assert_interface_matches,
    assert_solution_passes_cleanly,
    assert_wrong_and_distinct,
    seen_per_seed,
)
from tests.graders.checks.mutations import assert_mutation_caught, mutated_solution

SIGNATURE = "def padded_attention(x, w_qkv, w_o, n_heads, attention_mask, cache=None, base=10000.0):\n"


def test_the_challenge_files_agree_with_the_battery() -> None:
    assert_interface_matches(check, "padded_attention", [SIGNATURE.strip()[:-1], "attention_mask", "NaN"])


def test_the_solution_passes_cleanly_on_fresh_inputs() -> None:
    assert_solution_passes_cleanly(check)


def test_every_known_mistake_has_a_golden_case() -> None:
    assert_every_known_mistake_has_a_golden_case(check)


def test_inputs_are_fresh_every_run_and_fixed_by_a_seed() -> None:
    record = "SEEN = []\n\n\n" + SIGNATURE + "    SEEN.append(float(x.sum()))\n"
    seen_per_seed(check, mutated_solution(check, [(SIGNATURE, record)]))


@pytest.mark.parametrize("decode_only", [False, True])
def test_every_call_variant_is_wrong_and_distinct(decode_only: bool) -> None:
    batch = check._Batch(torch.Generator().manual_seed(0), [6, 3, 1], 2, 32, 4, 500.0, bool_mask=False)
    s, n = (6, 1) if decode_only else (0, 6)
    real = batch.mask[:, s : s + n].bool()
    variants = [((m,), y[real]) for m, y in batch.y_variants(s, n, decode_only).items()]
    assert_wrong_and_distinct(variants, batch.y[:, s : s + n][real])


@pytest.mark.parametrize(
    "edits",
    [
        [("theta = base ** (", "theta = 10000.0 ** (")],
        [(SIGNATURE, SIGNATURE.replace("base=10000.0", "base=1000.0"))],
        [("    q, k, v = (x @ w_qkv).split(d, dim=-1)", "    k, q, v = (x @ w_qkv).split(d, dim=-1)")],
        [("    q, k, v = (x @ w_qkv).split(d, dim=-1)", "    q, v, k = (x @ w_qkv).split(d, dim=-1)")],
        # every row read with row 0's mask (rows of the mask differ)
        [("    real = attention_mask.bool()", "    real = attention_mask.bool()[:1].expand(x.shape[0], -1)")],
        [('return y @ w_o, {"k": k, "v": v}', 'return y @ w_o, {"k": v, "v": k}')],
    ],
)
def test_a_swapped_field_or_ignored_argument_is_caught(edits: list[tuple[str, str]]) -> None:
    assert_mutation_caught(check, edits)


@pytest.mark.parametrize(
    ("old", "new", "phrase"),
    [
        ('    return y @ w_o, {"k": k, "v": v}', "    return y @ w_o", "should return a pair (y, cache)"),
        (
            '    return y @ w_o, {"k": k, "v": v}',
            '    return y @ w_o, {"k": k[:, :, -T:], "v": v}',
            "(every slot)",
        ),
        (
            '    return y @ w_o, {"k": k, "v": v}',
            '    return y[:, -1:] @ w_o, {"k": k, "v": v}',
            "y has shape",
        ),
    ],
)
def test_odd_values_fail_with_a_message(old: str, new: str, phrase: str) -> None:
    assert_fails_with(check, mutated_solution(check, [(old, new)]), phrase)

"""The tiled-attention battery: its content, speed, variants, the memory measure, mutations."""

from __future__ import annotations

import pytest
import torch

from graders.checks import tiled_attention as check
from graders.reference.tiled import attention_with_lse
from graders.sandbox.footprint import measured_call, storages
from tests.graders.checks.helpers import (
    assert_every_known_mistake_has_a_golden_case,
    assert_fails_with,
    assert_interface_matches,
    assert_solution_passes_cleanly,
    assert_wrong_and_distinct,
    seen_per_seed,
)
from tests.graders.checks.mutations import assert_mutation_caught, mutated_solution

SIGNATURE = "def tiled_attention(q, k, v, block_size, causal=False):\n"


def test_the_challenge_files_agree_with_the_battery() -> None:
    assert_interface_matches(
        check, "tiled_attention", [SIGNATURE.strip()[:-1], "merge_attention", "Tk - Tq + i"]
    )


def test_the_solution_passes_cleanly_on_fresh_inputs() -> None:
    assert_solution_passes_cleanly(check)


def test_every_known_mistake_has_a_golden_case() -> None:
    assert_every_known_mistake_has_a_golden_case(check)


def test_inputs_are_fresh_every_run_and_fixed_by_a_seed() -> None:
    record = "SEEN = []\n\n\n" + SIGNATURE + "    SEEN.append(float(q.sum()))\n"
    seen_per_seed(check, mutated_solution(check, [(SIGNATURE, record)]))


@pytest.mark.parametrize(
    ("Tq", "Tk", "block", "causal"), [(6, 11, 4, True), (7, 7, 3, True), (5, 9, 2, False)]
)
def test_every_tiled_variant_is_wrong_and_distinct(Tq: int, Tk: int, block: int, causal: bool) -> None:
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 2, n, 8, generator=gen, dtype=torch.float64) for n in (Tq, Tk, Tk))
    right, _ = attention_with_lse(q, k, v, causal)
    assert_wrong_and_distinct(check.tiled_variants(q, k, v, block, causal), right)


def test_the_measure_counts_fresh_float_tensors_and_not_views() -> None:
    x = torch.randn(64, 64)

    def views_and_small_blocks(t: torch.Tensor) -> torch.Tensor:
        u = t.transpose(0, 1).reshape(64, 64)[:, :8]  # views of the input
        u.mul_(1.0)  # in place
        return u @ torch.ones(8, 4)  # (64, 4) fresh

    _, largest = measured_call(views_and_small_blocks, (x,), {})
    assert largest == 256
    _, largest = measured_call(lambda t: torch.softmax(t @ t.T, -1).sum(), (x,), {})
    assert largest == 64 * 64
    _, largest = measured_call(lambda t: (t > 0).sum(), (x,), {})  # bool masks are not scores
    assert largest == 0


def test_storages_see_growth_and_moves() -> None:
    class Cache:
        def __init__(self) -> None:
            self.k = torch.zeros(2, 3)
            self.parts = [torch.zeros(4)]

    cache = Cache()
    before = storages(cache)
    assert sorted(n for _, n in before) == [16, 24]
    cache.k = torch.cat([cache.k, cache.k])
    assert storages(cache) != before


@pytest.mark.parametrize(
    "edits",
    [
        [("        if causal:\n", "        if False:\n")],  # the causal argument ignored
        [(SIGNATURE, SIGNATURE.replace("causal=False", "causal=True"))],  # a wrong default
        [("    query_pos = torch.arange(Tk - Tq, Tk)[:, None]", "    query_pos = torch.arange(Tq)[:, None]")],
        [("p @ v[..., start:stop, :]", "p @ k[..., start:stop, :]")],  # k where v belongs
        [("    return w1 * o1 + w2 * o2, lse\n", "    return w1 * o2 + w2 * o1, lse\n")],  # the parts swapped
        [("    w2 = torch.exp(lse2 - safe)[..., None]\n", "    w2 = torch.exp(lse1 - safe)[..., None]\n")],
    ],
)
def test_a_swapped_field_or_ignored_argument_is_caught(edits: list[tuple[str, str]]) -> None:
    assert_mutation_caught(check, edits)


@pytest.mark.parametrize(
    ("old", "new", "phrase"),
    [
        (
            "    return o / denom[..., None]\n",
            "    return (o / denom[..., None]).tolist()\n",
            "should be a tensor",
        ),
        (
            "    return w1 * o1 + w2 * o2, lse\n",
            "    return w1 * o1 + w2 * o2\n",
            "should return a pair (o, lse)",
        ),
    ],
)
def test_odd_values_fail_with_a_message(old: str, new: str, phrase: str) -> None:
    assert_fails_with(check, mutated_solution(check, [(old, new)]), phrase)

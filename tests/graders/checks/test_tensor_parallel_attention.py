"""The tensor-parallel-attention battery: the prompt's example, the sizes, the layouts it names, the
variants of a rank's partial, and what it tells a wrong or odd submission."""

from __future__ import annotations

import pytest
import torch

from graders.checks import tensor_parallel_attention as check
from graders.checks import tensor_parallel_attention_mistakes as mistakes
from graders.checks.serving_common import Rng
from graders.reference.attention import causal_self_attention
from graders.reference.tensor_parallel import attention_on_rank, shard_attention
from tests.graders.checks.helpers import (
    assert_every_known_mistake_has_a_golden_case,
    assert_fails_with_messages,
    assert_interface_matches,
    assert_solution_passes_cleanly,
    assert_wrong_and_distinct,
    cases_dir,
    challenge_dir,
    drawn_by_the_mock,
    run,
    seen_per_seed,
)

CHALLENGE = challenge_dir(check.SLUG)
SOLUTION = (CHALLENGE / "solution.py").read_text()


def _solution() -> dict[str, object]:
    namespace: dict[str, object] = {}
    exec(SOLUTION, namespace)
    return namespace


def _weights(d: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(2, 6, d, generator=gen, dtype=torch.float64)
    return (
        x,
        torch.randn(d, 3 * d, generator=gen, dtype=torch.float64),
        torch.randn(d, d, generator=gen, dtype=torch.float64),
    )


def test_module_interface_matches_the_challenge() -> None:
    assert_interface_matches(
        check,
        "shard_attention",
        (
            "shard_attention(w_qkv, w_o, n_heads, world_size)",
            "attention_on_rank(x, w_qkv_r, w_o_r, n_local_heads)",
            "`[q | k | v]`",
            "arXiv:1909.08053",
        ),
    )


def test_the_prompt_example_behaves_as_shown() -> None:
    namespace = _solution()
    x, w_qkv, w_o = (t.float() for t in _weights(8))
    shards = namespace["shard_attention"](w_qkv, w_o, 4, 2)  # type: ignore[operator]
    w_qkv_1, w_o_1 = shards[1]
    assert w_qkv_1.shape == (8, 12) and w_o_1.shape == (4, 8)
    assert torch.equal(w_qkv_1, w_qkv[:, [4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23]])
    assert torch.equal(w_o_1, w_o[4:8])
    y = sum(namespace["attention_on_rank"](x, a, b, 2) for a, b in shards)  # type: ignore[operator]
    assert torch.allclose(y, causal_self_attention(x, w_qkv, w_o, 4), atol=1e-5)
    with pytest.raises(ValueError, match="n_heads=6 is not a multiple of world_size=4"):
        namespace["shard_attention"](w_qkv, w_o, 6, 4)  # type: ignore[operator]


def test_every_known_mistake_has_a_golden_case_that_names_it() -> None:
    assert_every_known_mistake_has_a_golden_case(check)


def test_the_solution_passes_cleanly_on_fresh_inputs() -> None:
    assert_solution_passes_cleanly(check)


def test_the_starter_fails_every_test_without_crashing_the_grader_or_being_told_of_mistakes() -> None:
    report, _ = run(check, (CHALLENGE / "starter.py").read_text(), seed=0)
    assert report.tests and not any(t.passed for t in report.tests)
    assert all("NotImplementedError" in t.message for t in report.tests) and not report.diagnosis


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("world_size", check.WORLD_SIZES)
def test_the_sizes_of_a_run_all_differ_with_two_or_three_heads_per_rank(seed: int, world_size: int) -> None:
    sizes = check.random_sizes(Rng(seed), world_size)
    assert len({sizes.B, sizes.T, sizes.d, sizes.n_heads, sizes.world_size}) == 5
    assert sizes.n_local in (2, 3) and sizes.d % sizes.n_heads == 0 and sizes.T > 1


def test_the_uneven_head_counts_slice_without_an_error_of_their_own() -> None:
    for n_heads, world_size, hd in check.UNEVEN:
        assert n_heads % world_size and (n_heads * hd) % world_size == 0


@pytest.mark.parametrize("world_size", [2, 4])
def test_each_named_layout_is_recognised_on_every_rank_and_the_contract_is_not(world_size: int) -> None:
    d, H = 24, 2 * world_size
    hd = d // H
    _, w_qkv, w_o = _weights(d, world_size)
    for rank, (w_qkv_r, w_o_r) in enumerate(shard_attention(w_qkv, w_o, H, world_size)):
        assert mistakes.qkv_mistake(w_qkv_r, w_qkv, H, world_size, rank) is None
        assert mistakes.w_o_mistake(w_o_r, w_o, H, world_size, rank) is None
        width, nxt = 3 * d // world_size, shard_attention(w_qkv, w_o, H, world_size)[(rank + 1) % world_size]
        heads = [rank * 2, rank * 2 + 1]
        q, k, v = w_qkv.split(d, dim=1)
        interleaved = torch.cat([t[:, h * hd : (h + 1) * hd] for h in heads for t in (q, k, v)], dim=1)
        reversed_heads = torch.cat(
            [t[:, h * hd : (h + 1) * hd] for t in (q, k, v) for h in heads[::-1]], dim=1
        )
        wrong_qkv = {
            mistakes.INTERLEAVED_QKV: interleaved,
            mistakes.WHOLE_BLOCK_COLUMNS: w_qkv[:, rank * width : (rank + 1) * width],
            mistakes.OFF_BY_ONE: nxt[0],
            mistakes.HEAD_ORDER: reversed_heads,
            mistakes.REPLICATED: w_qkv,
        }
        for mistake, wrong in wrong_qkv.items():
            assert mistakes.qkv_mistake(wrong, w_qkv, H, world_size, rank) == mistake
        rows = w_o[[h * hd + j for h in heads for j in range(hd)]]
        wrong_o = {
            mistakes.W_O_BY_COLUMNS: w_o[:, rank * d // world_size : (rank + 1) * d // world_size],
            mistakes.OFF_BY_ONE: nxt[1],
            mistakes.HEAD_ORDER: torch.cat([rows[hd:], rows[:hd]]),
            mistakes.REPLICATED: w_o,
        }
        for mistake, wrong in wrong_o.items():
            assert mistakes.w_o_mistake(wrong, w_o, H, world_size, rank) == mistake
        assert mistakes.qkv_mistake(w_qkv_r * 1.5, w_qkv, H, world_size, rank) is None  # copies of nothing


@pytest.mark.parametrize("world_size", [1, 2, 4])
def test_every_variant_of_a_partial_that_applies_differs_from_the_contract_and_from_the_others(
    world_size: int,
) -> None:
    d, H = 36, 3 * world_size
    x, w_qkv, w_o = _weights(d, 7)
    shards = shard_attention(w_qkv, w_o, H, world_size)
    right = sum(attention_on_rank(x, a, b, 3) for a, b in shards)
    assert torch.allclose(torch.as_tensor(right), causal_self_attention(x, w_qkv, w_o, H))
    variants = mistakes.on_rank_variants(x, shards, 3)
    named = {m for (m,), _ in variants}
    assert (mistakes.AVERAGED in named) == (world_size > 1) == (mistakes.FULL_WIDTH_SCALE in named)
    assert_wrong_and_distinct(variants, torch.as_tensor(right))


def test_spans_say_a_layout_in_runs() -> None:
    assert mistakes.spans([0, 1, 2, 7, 8, 11]) == "0-2, 7-8, 11"


def test_a_stash_of_the_full_weights_fails_the_own_shard_test_by_name() -> None:
    report, _ = run(check, (cases_dir(check.SLUG) / "global_weights.py").read_text(), seed=2)
    own = next(t for t in report.tests if t.name.startswith("attention_on_rank reads only the shard"))
    assert not own.passed and "what the weights given to shard_attention before would give" in own.message
    assert mistakes.GLOBAL_WEIGHTS in report.diagnosis


def test_a_wrong_shard_says_which_columns_it_holds() -> None:
    report, _ = run(check, (cases_dir(check.SLUG) / "whole_block_columns.py").read_text(), seed=1)
    wrong = next(t for t in report.tests if not t.passed)
    assert "world_size=2" in wrong.name and "of the full weight" in wrong.message
    assert "(q)" in wrong.message and mistakes.WHOLE_BLOCK_COLUMNS in report.diagnosis


@pytest.mark.parametrize(
    "code",
    [
        "def shard_attention(w_qkv, w_o, n_heads, world_size):\n    return w_qkv\n\n\n"
        "def attention_on_rank(x, w_qkv_r, w_o_r, n_local_heads):\n    return x\n",
        "def shard_attention(w_qkv, w_o, n_heads, world_size):\n    return [(1, 2)] * world_size\n\n\n"
        "def attention_on_rank(x, w_qkv_r, w_o_r, n_local_heads):\n    return None\n",
        "def shard_attention(w_qkv, w_o, n_heads, world_size):\n    return [w_qkv] * world_size\n\n\n"
        "def attention_on_rank(x, w_qkv_r, w_o_r, n_local_heads):\n    return x[..., :1]\n",
    ],
)
def test_odd_answers_fail_with_a_message(code: str) -> None:
    assert_fails_with_messages(check, code)


def test_each_run_draws_fresh_inputs_unless_seeded() -> None:
    code = SOLUTION.replace(
        "def attention_on_rank(x, w_qkv_r, w_o_r, n_local_heads):",
        "SEEN = []\n\n\ndef attention_on_rank(x, w_qkv_r, w_o_r, n_local_heads):\n"
        "    SEEN.append(x.sum().item())",
    )
    a, b, c, d = seen_per_seed(check, code)
    assert a != b and c == d


def test_the_mock_interview_can_draw_it() -> None:
    assert check.SLUG in drawn_by_the_mock("parallelism")

"""The gqa-attention battery: its speed, its variants, and how it treats odd submissions."""

from __future__ import annotations

import pytest
import torch

from graders.checks import gqa_attention as check
from graders.reference.gqa import GQA
from tests.graders.checks.helpers import (
    assert_fails_with,
    assert_solution_passes_cleanly,
    assert_wrong_and_distinct,
    run,
    seen_per_seed,
)

MODULE = """
import torch
import torch.nn as nn
import torch.nn.functional as F

SEEN = []


class GQA(nn.Module):
    def __init__(self, d, n_q, n_kv):
        super().__init__()
        self.n_q, self.n_kv, self.hd = n_q, n_kv, d // n_q
        self.q = nn.Linear(d, d, bias=False)
        self.kv = nn.Linear(d, 2 * n_kv * self.hd, bias=False)
        self.o = nn.Linear(d, d, bias=False)

    def forward(self, x, cache=None):
        SEEN.append((tuple(x.shape), self.n_q, self.n_kv, None if cache is None else cache[0].shape[2]))
        B, T, d = x.shape
        q = self.q(x).view(B, T, self.n_q, self.hd).transpose(1, 2)
        k, v = self.kv(x).view(B, T, 2, self.n_kv, self.hd).unbind(2)
        k, v = k.transpose(1, 2), v.transpose(1, 2)
        if cache is not None:
            k, v = torch.cat([cache[0], k], 2), torch.cat([cache[1], v], 2)
        S = k.shape[2]
        mask = torch.ones(T, S, dtype=torch.bool).tril(S - T)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
        y = self.o(y.transpose(1, 2).reshape(B, T, d))
        return {returned}
"""
RIGHT = "y, (k, v)"


def test_the_solution_passes_cleanly_on_fresh_inputs() -> None:
    assert_solution_passes_cleanly(check)


def test_the_battery_covers_gqa_mha_mqa_decoding_and_chunks_on_a_cache() -> None:
    _, session = run(check, MODULE.format(returned=RIGHT))
    calls = session.module.SEEN
    heads = {(n_q, n_kv) for _, n_q, n_kv, _ in calls}
    assert any(1 < n_kv < n_q for n_q, n_kv in heads)  # GQA with more than one kv head
    assert any(n_kv == n_q for n_q, n_kv in heads)  # MHA
    assert any(n_kv == 1 for _, n_kv in heads)  # MQA
    assert any(shape[1] == 1 and cached for shape, _, _, cached in calls)  # decode steps
    assert any(shape[1] > 1 and cached for shape, _, _, cached in calls)  # chunked prefill
    assert min(shape[0] for shape, _, _, _ in calls) >= 2


def test_the_variant_engine_with_no_mistake_is_the_reference() -> None:
    torch.manual_seed(0)
    ref = GQA(96, 8, 2).double()
    w = {key: value.detach() for key, value in ref.state_dict().items()}
    x = torch.randn(2, 4, 96, dtype=torch.float64)
    cache = (torch.randn(2, 2, 3, 12, dtype=torch.float64), torch.randn(2, 2, 3, 12, dtype=torch.float64))
    with torch.no_grad():
        y, (k, v) = ref(x, cache)
    y_variant, (k_variant, v_variant) = check.gqa_variant(w, x, cache, 8, 2)
    assert torch.allclose(y, y_variant) and torch.equal(k, k_variant) and torch.equal(v, v_variant)


@pytest.mark.parametrize(("B", "d", "n_q", "n_kv"), check.CONFIGS)
def test_output_variants_are_wrong_and_distinct_for_a_chunk_on_a_cache(
    B: int, d: int, n_q: int, n_kv: int
) -> None:
    torch.manual_seed(0)
    ref = GQA(d, n_q, n_kv).double()
    w = {key: value.detach() for key, value in ref.state_dict().items()}
    hd = d // n_q
    x = torch.randn(B, 4, d, dtype=torch.float64)
    cache = (
        torch.randn(B, n_kv, 3, hd, dtype=torch.float64),
        torch.randn(B, n_kv, 3, hd, dtype=torch.float64),
    )
    with torch.no_grad():
        right = ref(x, cache)[0]
    # Mapping query heads to kv heads in the wrong order is no mistake when every query
    # head reads the same kv head (MQA) or its own (MHA); splitting kv in the wrong order is
    # none for MQA either.
    same: set[str] = set()
    if n_kv in (1, n_q):
        same.add(check.REPEAT_TILED)
    if n_kv == 1:
        same.add(check.KV_SPLIT)
    variants = [v for v in check.output_variants(w, x, cache, n_q, n_kv) if v[0][0] not in same]
    assert_wrong_and_distinct(variants, right)


def test_inputs_are_fresh_every_run_and_fixed_by_a_seed() -> None:
    code = MODULE.format(returned=RIGHT).replace(
        "SEEN.append((tuple(x.shape),", "SEEN.append((float(x.sum()),"
    )
    seen_per_seed(check, code)


@pytest.mark.parametrize(
    ("returned", "phrase"),
    [
        ("None", "forward returned NoneType, expected a pair (y, (k, v))"),
        ("y, k", "the cache forward returned is Tensor, expected a pair (k, v)"),
        ("y, (k, object())", "the returned v should be a tensor, got an object of your own"),
        ("(k, v), y", "the cache forward returned is Tensor"),
        ("y[:, :, :8], (k, v)", "y has shape"),
        ("y, (k.transpose(1, 2), v.transpose(1, 2))", "the cache is returned as (B, S, n_kv, hd)"),
        ("y, (v, k)", "the returned cache is (v, k)"),
    ],
)
def test_odd_values_fail_with_a_message(returned: str, phrase: str) -> None:
    assert_fails_with(check, MODULE.format(returned=returned), phrase)


def test_a_constructor_that_raises_fails_every_test_once_per_configuration() -> None:
    code = MODULE.format(returned=RIGHT).replace("super().__init__()", "raise ValueError('no GQA today')")
    report, session = run(check, code)
    assert not any(t.passed for t in report.tests)
    assert all(
        "your code raised ValueError: no GQA today (while building GQA(" in t.message for t in report.tests
    )

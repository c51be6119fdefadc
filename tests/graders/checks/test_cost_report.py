"""The cost report (graders/checks/cost.py): one named test of decode-step's,
rope-cached-attention's, gqa-attention's and llama-block-decode's batteries, of the three cache
batteries (kv-cache-buffer, paged-kv-cache, sliding-window-cache), of int8-kv-cache's,
left-padded-decoding's and numpy-cached-generation's, counts the submission's multiply-adds and
largest tensor against the reference's, and says the figure only informs."""

from __future__ import annotations

import re
from collections.abc import Callable
from types import ModuleType

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from graders.checks import (
    cost,
    decode_step,
    decode_step_cost,
    gqa_attention,
    gqa_attention_cost,
    int8_kv_cache,
    int8_kv_cache_cost,
    kv_cache_buffer,
    kv_cache_buffer_cost,
    left_padded_decoding,
    left_padded_decoding_cost,
    llama_block_cost,
    llama_block_decode,
    numpy_cached_generation,
    numpy_cached_generation_cost,
    paged_kv_cache,
    paged_kv_cost,
    rope_attention_cost,
    rope_cached_attention,
    sliding_window_cache,
    sliding_window_cost,
)
from graders.reference.decode import step as reference_step
from graders.reference.paged_cache import blocks_for
from graders.sandbox.work_counter import counted_call
from tests.graders.checks.helpers import cases_dir, challenge_dir, run

FIGURE = re.compile(
    r"your decode (step|call): (?P<madds>[\d.]+ [kM]) multiply-adds, largest tensor (?P<largest>[\d.]+ \w+); "
    r"reference: (?P<ref_madds>[\d.]+ [kM]), (?P<ref_largest>[\d.]+ \w+) "
    r"\((?P<ratio>[\d.]+)x the reference's multiply-adds, (?P<size_ratio>[\d.]+)x its largest tensor\)"
)
WASTEFUL = [(decode_step, decode_step_cost.NAME), (llama_block_decode, llama_block_cost.NAME)]
BATTERIES = [
    *WASTEFUL,
    (rope_cached_attention, rope_attention_cost.NAME),
    (gqa_attention, gqa_attention_cost.name()),
]
IDS = [check.SLUG for check, _ in BATTERIES]


def figure_of(check: ModuleType, name: str, code: str) -> re.Match[str]:
    report, _ = run(check, code, seed=3)
    test = next(t for t in report.tests if t.name == name)
    assert test.passed, test.message
    found = FIGURE.match(test.message)
    assert found, test.message
    assert "never decides the verdict" in test.message  # what the page says about the figure
    return found


@pytest.mark.parametrize(("check", "name"), BATTERIES, ids=IDS)
def test_the_worked_solution_costs_what_the_reference_does(check: ModuleType, name: str) -> None:
    found = figure_of(check, name, (challenge_dir(check.SLUG) / "solution.py").read_text())
    assert (found["ratio"], found["size_ratio"]) == ("1.00", "1.00")
    # decode-step and rope: the cache with its new row, 2x4x512x32; llama and gqa: the repeated
    # cache, 2x8x512x16
    assert found["largest"] == found["ref_largest"] == "512 KiB"


@pytest.mark.parametrize(("check", "name"), WASTEFUL, ids=IDS[:2])
def test_a_correct_but_wasteful_call_shows_a_larger_tensor(check: ModuleType, name: str) -> None:
    """It passes (the figure decides nothing) and the report shows the (t, t) float mask: 1 MiB, 2x."""
    found = figure_of(check, name, (cases_dir(check.SLUG) / "full_mask_wasteful.py").read_text())
    assert found["ratio"] == "1.00"
    assert (found["largest"], found["ref_largest"], found["size_ratio"]) == ("1.0 MiB", "512 KiB", "2.00")


LEAN = [
    (llama_block_decode, llama_block_cost.NAME, "hf_style_sdpa.py"),
    (gqa_attention, gqa_attention_cost.name(), "sdpa_enable_gqa.py"),
    (gqa_attention, gqa_attention_cost.name(), "grouped_einsum.py"),
]


@pytest.mark.parametrize(("check", "name", "case"), LEAN, ids=[f"{c.SLUG}/{case}" for c, _, case in LEAN])
def test_a_lean_call_shows_a_smaller_tensor_and_sdpa_counts_its_products(
    check: ModuleType, name: str, case: str
) -> None:
    """sdpa with shared kv heads, or an einsum over the groups, never repeats the cache: a quarter of
    the reference's largest tensor, and the same multiply-adds (the counter counts sdpa's products)."""
    found = figure_of(check, name, (cases_dir(check.SLUG) / case).read_text())
    assert (found["ratio"], found["size_ratio"]) == ("1.00", "0.25")


def test_the_counter_agrees_with_torchs_flop_counter_on_the_reference() -> None:
    """work_counter counts at the function level; FlopCounterMode (2 FLOPs per multiply-add) at dispatch."""
    B, P, d, h = decode_step_cost.COST
    x, w_qkv, w_o = torch.randn(B, 1, d), torch.randn(d, 3 * d), torch.randn(d, d)
    past = {"k": torch.randn(B, h, P, d // h), "v": torch.randn(B, h, P, d // h)}
    _, _, madds = counted_call(reference_step, (x, w_qkv, w_o, h, dict(past)), {})
    with FlopCounterMode(display=False) as flops:
        reference_step(x, w_qkv, w_o, h, dict(past))
    assert madds == flops.get_total_flops() // 2
    hd, t = d // h, P + 1
    assert madds == B * (d * 3 * d + 2 * h * t * hd + d * d)  # qkv, scores, weights @ v, w_o


def test_the_sentence_rounds_like_the_page_reads() -> None:
    assert cost.sentence("x", 4_200_000, 262_144, 4_200_000, 131_072).startswith(
        "x: 4.2 M multiply-adds, largest tensor 1.0 MiB; reference: 4.2 M, 512 KiB (1.00x the reference's "
        "multiply-adds, 2.00x its largest tensor)"
    )


# --- int8-kv-cache and left-padded-decoding ------------------------------------------------------

COST_FIGURE = re.compile(
    r"your (?P<what>[\w ]+?): (?P<madds>[\d.]+ [kM]) multiply-adds, largest tensor (?P<largest>[\d.]+ \w+); "
    r"reference: (?P<ref_madds>[\d.]+ [kM]), (?P<ref_largest>[\d.]+ \w+) "
    r"\((?P<ratio>[\d.]+)x the reference's multiply-adds, (?P<size_ratio>[\d.]+)x its largest tensor\)"
)


def int8_expected() -> tuple[str, str]:
    """Multiply-adds and largest tensor of one query per row over T positions: q k^T and w v, and
    one dequantized cache (B, H, T, hd) in float32."""
    B, H, T, hd = int8_kv_cache_cost.COST
    return cost.count(2 * B * H * T * hd), cost.size(B * H * T * hd * 4)


def padded_expected() -> tuple[str, str]:
    """Per row: the qkv and output projections, 4 d^2, and q k^T and w v over S slots, 2 H S hd;
    the largest tensor is the cache with its new column, (B, H, S, hd) in float32."""
    B, P, d, h = left_padded_decoding_cost.COST
    S, hd = P + 1, d // h
    return cost.count(B * (4 * d * d + 2 * h * S * hd)), cost.size(B * h * S * hd * 4)


COUNTED = [
    (int8_kv_cache, int8_kv_cache_cost.NAME, "int8 attention", int8_expected),
    (left_padded_decoding, left_padded_decoding_cost.NAME, "decode step", padded_expected),
]


def cost_figure_of(check: ModuleType, name: str, code: str, seed: int = 3) -> re.Match[str]:
    report, _ = run(check, code, seed=seed)
    test = next(t for t in report.tests if t.name == name)
    assert report.tests[-1] is test  # last in the battery: the other tests' inputs stay as they were
    assert test.passed, test.message
    found = COST_FIGURE.match(test.message)
    assert found, test.message
    assert "never decides the verdict" in test.message
    return found


@pytest.mark.parametrize(
    ("check", "name", "what", "expected"), COUNTED, ids=[check.SLUG for check, *_ in COUNTED]
)
@pytest.mark.parametrize("seed", [3, 11])
def test_the_worked_solution_costs_what_the_reference_does_on_a_long_cache(
    check: ModuleType, name: str, what: str, expected: Callable[[], tuple[str, str]], seed: int
) -> None:
    found = cost_figure_of(check, name, (challenge_dir(check.SLUG) / "solution.py").read_text(), seed)
    madds, largest = expected()
    assert found["what"] == what
    assert (found["ratio"], found["size_ratio"]) == ("1.00", "1.00")
    assert (found["madds"], found["ref_madds"]) == (madds, madds)
    assert (found["largest"], found["ref_largest"]) == (largest, largest)


def test_a_packed_batch_shows_b_times_the_attention_multiply_adds() -> None:
    """Correct, so it passes; packing the rows into one sequence scores every query against every
    row's keys: the projections cost the same, the attention B times as much."""
    code = (cases_dir(left_padded_decoding.SLUG) / "packed_batch_wasteful.py").read_text()
    found = cost_figure_of(left_padded_decoding, left_padded_decoding_cost.NAME, code)
    B, P, d, h = left_padded_decoding_cost.COST
    projections, attention = 4 * d * d, 2 * h * (P + 1) * (d // h)  # per row
    assert found["ratio"] == f"{(projections + B * attention) / (projections + attention):.2f}" == "2.33"
    assert found["size_ratio"] == "1.00"  # the same cache; the packed scores are smaller than it


WRONG_STEP = [
    (int8_kv_cache, int8_kv_cache_cost.NAME, "keys_only.py"),
    (left_padded_decoding, left_padded_decoding_cost.NAME, "mask_only_at_prefill.py"),
]


@pytest.mark.parametrize(("check", "name", "case"), WRONG_STEP, ids=[c.SLUG for c, *_ in WRONG_STEP])
def test_the_cost_test_fails_when_the_counted_call_is_wrong(check: ModuleType, name: str, case: str) -> None:
    """What decides is the grader's own comparison of the counted call's output, not the figures."""
    report, _ = run(check, (cases_dir(check.SLUG) / case).read_text(), seed=3)
    test = next(t for t in report.tests if t.name == name)
    assert not test.passed and "differs by up to" in test.message and "multiply-adds" not in test.message


# numpy-cached-generation: the NumPy half of the counter (graders/sandbox/numpy_work_counter.py),
# float64 arrays. One decode_step over t cached rows (t + 1 after its own) costs 3 d^2 (q, k, v)
# + 2 (t + 1) d (scores, weights @ v) + d^2 (W_o) + d V (W_lm); its largest array is the cache with
# the new row, (t + 1, d).


def numpy_step_sentence(madds: int, ref_madds: int) -> str:
    t, d, _ = numpy_cached_generation_cost.COST
    largest = (t + 1) * d
    return cost.sentence("your decode step", madds, largest, ref_madds, largest, itemsize=8, library="NumPy")


def numpy_reference_madds() -> int:
    t, d, V = numpy_cached_generation_cost.COST
    return 3 * d * d + 2 * (t + 1) * d + d * d + d * V


def numpy_figure(code: str) -> str:
    found = figure_of(numpy_cached_generation, numpy_cached_generation_cost.NAME, code)
    return found.string


def test_numpy_the_worked_solution_costs_exactly_what_the_reference_does() -> None:
    code = (challenge_dir(numpy_cached_generation.SLUG) / "solution.py").read_text()
    message = numpy_figure(code)
    want = numpy_reference_madds()
    assert want == 90_112  # 4 x 64^2 + 2 x 512 x 64 + 64 x 128
    assert message == numpy_step_sentence(want, want)
    assert message.startswith(
        "your decode step: 90.1 k multiply-adds, largest tensor 256 KiB; reference: 90.1 k, 256 KiB "
        "(1.00x the reference's multiply-adds, 1.00x its largest tensor). "
        "Measured in the matrix products NumPy was asked for"
    )


def test_numpy_folding_the_output_projections_every_step_shows_its_multiply_adds() -> None:
    """It passes (the figure decides nothing); W_o @ W_lm, rebuilt per step, costs d^2 V where the
    reference's ctx @ W_o costs d^2: 6.77x."""
    _, d, V = numpy_cached_generation_cost.COST
    code = (cases_dir(numpy_cached_generation.SLUG) / "folded_output_wasteful.py").read_text()
    message = numpy_figure(code)
    want = numpy_reference_madds()
    assert message == numpy_step_sentence(want - d * d + d * d * V, want)
    assert "610.3 k multiply-adds" in message and "(6.77x the reference's multiply-adds, 1.00x" in message


def test_numpy_the_cost_test_fails_only_on_wrong_logits() -> None:
    code = (cases_dir(numpy_cached_generation.SLUG) / "not_scaled.py").read_text()
    report, _ = run(numpy_cached_generation, code, seed=3)
    test = next(t for t in report.tests if t.name == numpy_cached_generation_cost.NAME)
    assert not test.passed and "the logit vector (128,) differs" in test.message
    assert "multiply-adds" not in test.message


def test_numpy_a_step_that_reruns_the_whole_sequence_shows_512x() -> None:
    """recomputes_from_tokens.py (a failing case: it never reads cache["k"]) runs the full forward
    over all t + 1 = 512 tokens: 512 (4 d^2 + d V) + 2 x 512^2 d multiply-adds, exactly 512x the
    step's, and the (512, 512) scores, 8x the cache. The cost test itself passes: its logits are right."""
    t, d, V = numpy_cached_generation_cost.COST
    code = (cases_dir(numpy_cached_generation.SLUG) / "recomputes_from_tokens.py").read_text()
    report, _ = run(numpy_cached_generation, code, seed=3)
    test = next(t for t in report.tests if t.name == numpy_cached_generation_cost.NAME)
    rows = t + 1
    madds = rows * (4 * d * d + d * V) + 2 * rows * rows * d
    assert madds == 512 * numpy_reference_madds()
    largest = rows * rows
    assert test.passed and test.message == cost.sentence(
        "your decode step", madds, largest, numpy_reference_madds(), rows * d, itemsize=8, library="NumPy"
    )
    assert "(512.00x the reference's multiply-adds, 8.00x its largest tensor)" in test.message


# --- the cache batteries: a write does no matrix product, so the largest tensor is the figure -------

CACHE_FIGURE = re.compile(
    r"your (?P<what>[^:]+): (?P<madds>[\d.]+(?: [kM])?) multiply-adds, "
    r"(?:largest tensor (?P<largest>[\d.]+ \w+)|no new tensor); "
    r"reference: (?P<ref_madds>[\d.]+(?: [kM])?), (?:(?P<ref_largest>[\d.]+ \w+)|no new tensor)"
    r"(?: \((?P<ratios>[^)]*)\))?\. "
)
CACHES = [
    (kv_cache_buffer, kv_cache_buffer_cost.NAME),
    (paged_kv_cache, paged_kv_cost.NAME),
    (sliding_window_cache, sliding_window_cost.NAME),
]


def cache_figure_of(check: ModuleType, name: str, code: str) -> re.Match[str]:
    report, _ = run(check, code, seed=3)
    test = next(t for t in report.tests if t.name == name)
    assert test.passed, test.message
    assert report.tests[-1] is test  # last in the battery: every other test ran first
    found = CACHE_FIGURE.match(test.message)
    assert found, test.message
    assert "never decides the verdict" in test.message
    return found


def paged_sizes(what: str) -> tuple[int, int]:
    """The gathered path's largest tensor (bytes) and multiply-adds for the lengths the figure names."""
    _, bs, H, hd, _, _ = paged_kv_cost.COST
    lengths = [int(n) for n in re.findall(r"\d+", what.split("sequences of ")[1].split(" tokens")[0])]
    assert len(lengths) == paged_kv_cost.COST[0], what
    longest_blocks = max(blocks_for(n, bs) for n in lengths)
    return H * longest_blocks * bs * hd * 4, sum(H * n * 2 * hd for n in lengths)  # q k^T and weights @ v


@pytest.mark.parametrize(("check", "name"), CACHES, ids=[check.SLUG for check, _ in CACHES])
def test_the_worked_cache_solutions_cost_what_the_reference_does(check: ModuleType, name: str) -> None:
    found = cache_figure_of(check, name, (challenge_dir(check.SLUG) / "solution.py").read_text())
    assert (found["madds"], found["largest"]) == (found["ref_madds"], found["ref_largest"])
    if check is kv_cache_buffer:  # written in place, handed back as views: no tensor on either side
        assert (found["madds"], found["largest"], found["ratios"]) == ("0", None, None)
    elif check is sliding_window_cache:  # the kept (B, H, n_sink + window, hd) gathered once
        window, n_sink, B, H, hd = sliding_window_cost.COST
        kept_bytes = B * H * (n_sink + window) * hd * 4
        assert (found["madds"], found["largest"]) == ("0", cost.size(kept_bytes)) == ("0", "128 KiB")
        assert found["ratios"] == "1.00x its largest tensor"
    else:
        largest, madds = paged_sizes(found["what"])
        assert (found["largest"], found["madds"]) == (cost.size(largest), cost.count(madds))
        assert found["ratios"] == "1.00x the reference's multiply-adds, 1.00x its largest tensor"


def test_an_update_that_rebuilds_the_layer_with_cat_passes_and_shows_the_layer() -> None:
    """Copied back in place, so its views hold and it passes; every step allocates a whole layer."""
    case = cases_dir(kv_cache_buffer.SLUG) / "cat_copied_back_wasteful.py"
    found = cache_figure_of(kv_cache_buffer, kv_cache_buffer_cost.NAME, case.read_text())
    dims = kv_cache_buffer_cost.COST
    layer_bytes = dims.batch * dims.n_heads * dims.max_len * dims.head_dim * 4  # (B, H, max_len, hd)
    assert (found["madds"], found["largest"], found["ref_largest"]) == ("0", cost.size(layer_bytes), None)
    assert found["largest"] == "128 KiB" and found["ratios"] is None  # no ratio against none


def test_a_ring_unrolled_by_concatenating_it_with_itself_passes_and_shows_twice_the_window() -> None:
    """Written in place, read back through cat([ring, ring]): (B, H, 2 window, hd) against the kept."""
    case = cases_dir(sliding_window_cache.SLUG) / "doubled_ring_wasteful.py"
    found = cache_figure_of(sliding_window_cache, sliding_window_cost.NAME, case.read_text())
    window, n_sink, B, H, hd = sliding_window_cost.COST
    doubled, kept = B * H * 2 * window * hd * 4, B * H * (n_sink + window) * hd * 4
    assert (found["madds"], found["largest"], found["ref_largest"]) == (
        "0",
        cost.size(doubled),
        cost.size(kept),
    )
    assert (found["largest"], found["ref_largest"]) == ("252 KiB", "128 KiB")
    assert found["ratios"] == f"{doubled / kept:.2f}x its largest tensor" == "1.97x its largest tensor"


def test_batched_paged_attention_shows_the_whole_padded_batch() -> None:
    """The batched path pads every table to the longest: B times the gathered path's largest tensor."""
    case = cases_dir(paged_kv_cache.SLUG) / "batched_attention.py"
    found = cache_figure_of(paged_kv_cache, paged_kv_cost.NAME, case.read_text())
    n_seqs, bs, H, hd, _, _ = paged_kv_cost.COST
    largest, madds = paged_sizes(found["what"])
    padded = largest // (H * hd * 4)  # positions of the longest table, every row padded to it
    assert (found["ref_largest"], found["ref_madds"]) == (cost.size(largest), cost.count(madds))
    assert found["largest"] == cost.size(n_seqs * largest)
    assert found["madds"] == cost.count(n_seqs * H * padded * 2 * hd)
    assert f"{n_seqs:.2f}x its largest tensor" in found["ratios"]


def test_a_reference_without_a_tensor_leaves_the_ratio_out() -> None:
    text = cost.sentence("your update", 0, 0, 0, 0)
    assert text.startswith("your update: 0 multiply-adds, no new tensor; reference: 0, no new tensor. ")
    assert "(a write in place or a view makes none)" in text


WRONG = [
    (kv_cache_buffer, kv_cache_buffer_cost.NAME, "writes_at_zero.py", "k_all (B, H, start + 1, hd) differs"),
    (paged_kv_cache, paged_kv_cost.NAME, "attention_not_scaled.py", "the output (B, n_heads, 1, head_dim)"),
    (sliding_window_cache, sliding_window_cost.NAME, "window_plus_one.py", "k_kept (B, H, K, hd) has shape"),
]


@pytest.mark.parametrize(
    ("check", "name", "case", "said"), WRONG, ids=[f"{c.SLUG}/{case}" for c, _, case, _ in WRONG]
)
def test_the_cost_test_fails_for_a_wrong_answer_of_the_counted_call(
    check: ModuleType, name: str, case: str, said: str
) -> None:
    """What decides is the counted call's answer, checked by the grader against the reference's."""
    report, _ = run(check, (cases_dir(check.SLUG) / case).read_text(), seed=3)
    test = next(t for t in report.tests if t.name == name)
    assert not test.passed and said in test.message, test.message
    assert "multiply-adds" not in test.message  # no figure for a wrong answer

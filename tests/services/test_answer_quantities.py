"""Numbers with units in answers: read as quantities, compared within the card's tolerance, and
used by the key-point matcher (issue 22, item 9). The values are chosen so that a matcher that
ignored the unit, mixed up GiB and GB, or ignored the tolerance would fail."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.content.loader import load_bank
from app.services import answer_quantities as aq
from app.services import key_point_matcher as kpm
from app.services.key_point_suggestions import card_tolerance

ROOT = Path(__file__).resolve().parents[2]


def one(text: str) -> aq.Quantity:
    found = aq.quantities(text)
    assert len(found) == 1, found
    return found[0]


@pytest.fixture(scope="module")
def cards() -> dict[str, object]:
    return {c.id: c for c in load_bank(ROOT / "questions").cards}


@pytest.fixture(scope="module")
def semantic() -> kpm.KeyPointMatcher:
    matcher = kpm.KeyPointMatcher()
    assert matcher.embedder() is not None, "the packaged model did not load"
    return matcher


def test_binary_and_decimal_prefixes_are_different_units() -> None:
    stated = one("4.50 GiB")
    assert aq.agree(one("4.83 GB"), stated, 0.01)  # the same amount of memory, in decimal units
    assert aq.agree(one("4608 MiB"), stated, 0.01)
    assert not aq.agree(one("4.5 GB"), stated, 0.01)  # the number of GiB with GB's unit: 7% short
    assert not aq.agree(one("4.5 TiB"), stated, 0.01)
    assert one("1 GiB").value == 2**30 and one("1 GB").value == 10**9


def test_times_compare_across_units_and_not_across_dimensions() -> None:
    assert aq.agree(one("702 us"), one("0.702 ms"), 0.02)
    assert aq.agree(one("702 µs"), one("0.702 ms"), 0.02)
    assert not aq.agree(one("702 ms"), one("0.702 ms"), 0.02)
    assert not aq.agree(one("702 MB"), one("702 ms"), 0.02)  # a size is never a time
    assert one("3.35 TB/s").dimension == "bytes/s" and one("989 TFLOPS").dimension == "flop/s"
    assert one("248 tokens/s").dimension == "tokens/s" and one("295 FLOP/byte").dimension == "flop/byte"


def test_the_tolerance_is_relative_and_the_stated_rounding_counts() -> None:
    stated = one("4.50 GiB")
    assert aq.agree(one("4.42 GiB"), stated, 0.02)  # 1.8% short
    assert not aq.agree(one("4.42 GiB"), stated, 0.01)
    assert not aq.agree(one("4.40 GiB"), stated, 0.02)  # 2.2% short
    # "9.7x" stands for 9.65 to 9.75: 9.74 agrees at no tolerance, 9.8 does not.
    assert aq.agree(one("9.74x"), one("9.7x"), 0.0) and not aq.agree(one("9.8x"), one("9.7x"), 0.0)


def test_products_element_widths_and_bare_numbers_are_not_quantities() -> None:
    assert aq.quantities("2 x 12 x 12 x 64 x 4 bytes = 72 KiB, over 1,024 tokens and 12 layers") == [
        one("72 KiB")
    ]
    assert aq.quantities("400 × 0.025 in Llama-2-7B, 2 FLOPs per parameter") == []
    assert [q.text for q in aq.quantities("124M parameters, 6.74B, 9x, 24 times, 60%")] == [
        "124M",
        "6.74B",
        "9x",
        "24 times",
        "60%",
    ]


def test_a_hedged_figure_is_widened_except_a_memory_size() -> None:
    assert one("about 9x").hedged and not one("9x").hedged
    assert aq.near(one("about 9x"), one("9.7x"), 0.01)  # 7% off, stated as an estimate
    assert not aq.near(one("9x"), one("9.7x"), 0.01)
    assert not aq.near(one("about 4.5 GB"), one("4.50 GiB"), 0.01)  # the GiB/GB slip stays a slip


def test_the_points_number_with_the_other_prefix_is_a_slip_anywhere_in_the_answer() -> None:
    point = aq.quantities("128 KiB per token, 16.00 GiB for one 128K sequence")
    # The first figure is right, the second is GiB's number written as GB: the point is contradicted.
    answer = aq.quantities("128 KiB per token, so 16.00 GB for the prompt")
    check = aq.check_point(answer, answer[:1], point, point, 0.02)
    assert check.stated and check.contradicted
    assert not aq.check_point(answer[:1], answer[:1], point, point, 0.02).contradicted
    assert aq.swapped(one("16.00 GB"), one("16.00 GiB"), 0.02)
    assert not aq.swapped(one("17.18 GB"), one("16.00 GiB"), 0.02)  # the same size, rightly converted
    assert not aq.swapped(one("16 ms"), one("16.00 GiB"), 0.02)


def test_a_card_lends_its_numeric_problems_tolerance(cards: dict) -> None:
    formula = cards["kv-formula-gpt2-small"]  # asked as kv_bytes_per_token (0.5%) and kv_cache_size (1%)
    assert card_tolerance(formula.topic, formula.tags) == 0.01
    flash = cards["flashattention-and-the-kv-cache"]  # no numeric problem on its topic
    assert card_tolerance(flash.topic, flash.tags) == aq.DEFAULT_TOLERANCE == 0.02


def test_the_reported_answer_covers_the_point_that_states_its_figure(
    cards: dict, semantic: kpm.KeyPointMatcher
) -> None:
    points = cards["kv-formula-gpt2-small"].key_points  # point 2: "... 4.50 GiB of cache, 9.7x ..."
    got = semantic.suggest("4.5 GiB, about 9x the fp32 weights", points, 0.01)
    assert got.points == [2]
    assert semantic.suggest("4.83 GB, close to ten times the weights", points, 0.01).points == [2]


@pytest.mark.parametrize(
    "figure",
    [
        "2.25 GiB",  # half: a factor of 2 dropped
        "4.5 GB",  # GiB's number with GB's unit
        "4.40 GiB",  # 2.2% short, outside the card's 1%
        "4.5 TiB",
    ],
)
def test_the_words_of_a_point_with_a_wrong_figure_do_not_cover_it(
    cards: dict, semantic: kpm.KeyPointMatcher, figure: str
) -> None:
    points = cards["kv-formula-gpt2-small"].key_points
    words = f"Sixty-four sequences that each fill the 1,024-token window need {figure} of cache."
    assert 2 not in semantic.suggest(words, points, 0.01).points
    assert 2 in semantic.suggest(words.replace(figure, "4.50 GiB"), points, 0.01).points
    # The lexical matcher keeps the rule too.
    assert 2 not in kpm.KeyPointMatcher(loader=_missing).suggest(words, points, 0.01).points


def _missing() -> kpm.Embedder:
    raise ModuleNotFoundError("No module named 'wordllama'")


def test_another_points_figure_is_not_a_wrong_figure_for_this_one(
    cards: dict, semantic: kpm.KeyPointMatcher
) -> None:
    points = cards["kv-formula-gpt2-small"].key_points
    text = "Per token it is 72 KiB, and sixty-four full windows need 4.50 GiB of cache."
    assert {1, 2} <= set(semantic.suggest(text, points, 0.01).points)


def test_two_points_repeated_without_full_stops_are_both_covered(
    cards: dict, semantic: kpm.KeyPointMatcher
) -> None:
    """The reported miss: two points run together in one clause embed nearer the longer one."""
    points = cards["flashattention-and-the-kv-cache"].key_points
    text = (
        "FlashAttention removes a temporary object the n × n score and probability matrices that a "
        "naive kernel writes to HBM during a forward pass, 2,048 MiB per head per layer in fp16 at "
        "32,768 tokens and it saves activation memory and HBM traffic and the biggest gains are in "
        "training and prefill where many queries meet many keys"
    )
    assert len(kpm.clauses(text)) == 1
    assert {0, 2} <= set(semantic.suggest(text, points).points)

"""Every card's "Open this case in the calculator" link opens the case the card states: the cache
size, the bytes per token and the sequences that fit read on the page exactly as the card writes
them, and the context stays inside the model's window unless the card's own case is past it."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import pytest

from app.content.loader import load_bank
from app.routes.calculator import CalcForm, calculator_url
from app.services.calculator import ALL_MODELS, CONTEXT_WINDOWS, CalcResult, calculate, fmt_bytes

CARDS = {c.id: c for c in load_bank(Path(__file__).parents[2] / "questions").cards}
LINKED = sorted(card_id for card_id, c in CARDS.items() if calculator_url(list(c.figures)))


def _model_of(name: str) -> tuple[str, str] | None:
    """(model key, rest of the name) for a figure that names a bank model first."""
    for key in sorted(ALL_MODELS, key=len, reverse=True):
        if name.startswith(key + "_"):
            return key, name[len(key) + 1 :]
    return None


def _tokens(text: str) -> int:
    return int(text[:-1]) * 1024 if text.endswith("k") else int(text)


def _opened(card_id: str) -> tuple[dict[str, str], CalcResult]:
    url = calculator_url(list(CARDS[card_id].figures))
    assert url is not None
    query = dict(parse_qsl(urlsplit(url).query))
    form = CalcForm.from_query(
        query.get("model"), None, query.get("weights"), query.get("cache"),
        query.get("context"), query.get("batch"), None, None,
    )  # fmt: skip
    return query, calculate(form.to_input())


def test_some_cards_link_to_the_calculator() -> None:
    assert len(LINKED) >= 20, LINKED  # the check below is over a real set, not an empty one


@pytest.mark.parametrize("card_id", LINKED)
def test_the_link_opens_the_figures_the_card_states(card_id: str) -> None:
    query, result = _opened(card_id)
    inp = result.input
    checked = 0
    for name, value in CARDS[card_id].figures.items():
        named = _model_of(name)
        if named is None or named[0] != inp.model:
            continue
        rest = named[1]
        dtype = re.search(r"_(fp32|fp16|bf16|fp8|int8)$", rest)
        if dtype and dtype.group(1) != inp.cache:
            continue
        if re.fullmatch(r"kib_per_token(_fp32|_bf16|_fp16)?", rest):
            assert fmt_bytes(result.bytes_per_token) == value, (name, value)
            checked += 1
        case = re.fullmatch(r"gib_(\d+k?)(?:x(\d+))?(?:_\w+)?", rest)
        if case and _tokens(case.group(1)) == inp.context and int(case.group(2) or 1) == inp.batch:
            assert fmt_bytes(result.cache_bytes) == value, (name, value)
            checked += 1
        fit = re.fullmatch(r"(\d+k?)_seqs_80gb", rest)
        # Beside the weights, as the page counts; a 70B's figure is 80 GB of cache alone (its weights
        # need two GPUs), which the page does not claim to show.
        if (
            fit
            and result.free_bytes > 0
            and _tokens(fit.group(1)) == inp.context
            and result.gpu.hbm_bytes == 80e9
        ):
            assert f"{result.sequences_fit:,}" == value, (name, value)
            checked += 1
    if "context" in query:
        # A context the card itself states (GPT-2 small's 1,024 x 64), so at least one figure matched...
        assert checked, (card_id, query)
    window = CONTEXT_WINDOWS.get(inp.model)
    if window is not None and inp.context > window:
        # ...and a case past the model's window only where the card's own figure is (70B at 8,000).
        assert checked and result.warning, (card_id, query)


def test_the_gpt2_card_opens_1024_tokens_by_64_in_fp32() -> None:
    query, result = _opened("kv-formula-gpt2-small")
    assert query == {
        "model": "gpt2_small",
        "context": "1024",
        "batch": "64",
        "weights": "fp32",
        "cache": "fp32",
    }
    assert (
        fmt_bytes(result.cache_bytes) == CARDS["kv-formula-gpt2-small"].figures["gpt2_small_gib_1024x64_fp32"]
    )


@pytest.mark.parametrize(
    ("n", "text"),
    [(2**29, "0.50 GiB"), (4.5 * 2**30, "4.50 GiB"), (512 * 2**10, "512 KiB"), (22_528, "22 KiB"),
     (1.5 * 2**20, "1.5 MiB"), (300 * 2**20, "300 MiB"), (1000, "1,000 bytes")],
)  # fmt: skip
def test_bytes_are_written_as_the_cards_write_them(n: float, text: str) -> None:
    assert fmt_bytes(n) == text

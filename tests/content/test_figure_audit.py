"""The audit that fails when a figure on any card is neither computed nor quoted."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from app.cli import main
from app.content.figure_audit import SEEDS, audit_card, card_text, find_figures
from app.content.figures import compute_figures
from app.content.loader import load_bank, parse_card

ROOT = Path(__file__).resolve().parents[2] / "questions"
BANK = load_bank(ROOT)
FIGURES = compute_figures()

CARD = """---
id: audit-example
title: An example
topic: roofline
difficulty: easy
sources:
  - "Pope et al., 2022, Efficiently Scaling Transformer Inference (arXiv:2211.05102)"
figures:
  roofline_min_ms_llama2_7b_h100: "4.02 ms"
quotes:
  "3.35 TB/s": "Pope et al., 2022"
---
## Question

How fast can Llama-2-7B decode on one H100? {question}

## Key points

- The bound is 4.02 ms at 3.35 TB/s.
- It has 32 layers; Llama 2 came out in 2023 (arXiv:2307.09288).
- {claim}

## Follow-ups

### Why?
{{probes: [0], difficulty: same}}

Each step reads every weight once (2 bytes each in fp16, 8-bit when quantised).

## Common wrong answers

### "It is compute-bound, about 10x faster than that."

It is not: 10x faster would need {why}.
"""


def card(claim: str = "Nothing else.", question: str = "", why: str = "more bandwidth") -> object:
    parsed, problems = parse_card(CARD.format(claim=claim, question=question, why=why), "cards/x/audit.md")
    assert parsed is not None, problems
    return parsed


@pytest.mark.parametrize(
    ("text", "figures"),
    [
        ("2.62 GB and 2.44 GiB", ["2.62 GB", "2.44 GiB"]),
        (
            "3.35 TB/s, 2,039 GB/s, 989 TFLOPS, 295 FLOP/byte",
            ["3.35 TB/s", "2,039 GB/s", "989 TFLOPS", "295 FLOP/byte"],
        ),
        ("4.02 ms, 12 us, 1.7 s", ["4.02 ms", "12 us", "1.7 s"]),
        ("24x faster, a 31-fold cut, 24 times slower, 8× smaller", ["24x", "31-fold", "24 times", "8×"]),
        ("60% MBU at 248 tokens/s", ["60%", "248 tokens/s"]),
        ("6.74B parameters; 124M parameters", ["6.74B", "124M"]),
    ],
)
def test_finds_numbers_with_units_and_multipliers(text: str, figures: list[str]) -> None:
    assert [f.text for f in find_figures(text)] == figures


@pytest.mark.parametrize(
    "text",
    [
        "32 layers, 8 KV heads, head_dim 128, 2019, arXiv:2211.05102",
        "Llama-2-7B, Mistral 7B, Mixtral-8x7B, Llama 3 8B, a 70B model",
        "fp16, 8-bit, int4, a 4096-token window, 10^9 bytes, 2 bytes per element",
        "`2 x layers x kv_heads x head_dim`, position 1,024, 1990s",
    ],
)
def test_ordinary_numbers_are_not_figures(text: str) -> None:
    assert find_figures(text) == []


def test_declared_and_quoted_figures_pass() -> None:
    assert audit_card(card()) == []  # type: ignore[arg-type]


def test_an_unaccounted_figure_names_the_card_and_the_text() -> None:
    problems = audit_card(card(claim="In practice it reaches 150 tokens/s."))  # type: ignore[arg-type]
    assert [str(p) for p in problems] == [
        "cards/x/audit.md: figures: '150 tokens/s' is neither declared under figures nor quoted "
        "(quotes:) from a source"
    ]


def test_the_question_and_follow_ups_are_audited_too() -> None:
    problems = audit_card(card(question="A colleague measured 7.5 ms."))  # type: ignore[arg-type]
    assert len(problems) == 1 and "'7.5 ms'" in str(problems[0])


def test_a_wrong_answer_may_repeat_its_own_wrong_figure_but_not_add_one() -> None:
    assert audit_card(card(why="a 10x faster memory")) == []  # type: ignore[arg-type]
    problems = audit_card(card(why="a 12x faster memory"))  # type: ignore[arg-type]
    assert len(problems) == 1 and "'12x'" in str(problems[0])


def test_quotes_must_be_on_the_card_and_name_a_source() -> None:
    text = CARD.format(claim="x", question="", why="y").replace(
        '"3.35 TB/s": "Pope et al., 2022"', '"3.35 TB/s": "a blog"\n  "9.9 ms": "seed 000"'
    )
    parsed, _ = parse_card(text, "cards/x/audit.md")
    messages = [str(p) for p in audit_card(parsed)]  # type: ignore[arg-type]
    assert "cards/x/audit.md: quotes.9.9 ms: is quoted but not on the card" in messages
    assert any(
        "quotes.3.35 TB/s: source 'a blog' is neither one of the card's sources nor a seed" in m
        for m in messages
    )


@pytest.mark.parametrize("bank_card", BANK.cards, ids=lambda c: c.id)
def test_every_figure_on_every_card_is_computed_or_quoted(bank_card) -> None:  # type: ignore[no-untyped-def]
    problems = audit_card(bank_card)
    assert not problems, "\n".join(map(str, problems))


def test_check_content_reports_an_unaccounted_figure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copy(ROOT / "topics.yaml", tmp_path / "topics.yaml")
    (tmp_path / "cards" / "roofline").mkdir(parents=True)
    (tmp_path / "cards" / "roofline" / "audit.md").write_text(
        CARD.format(claim="It measured 3.9 ms.", question="", why="y")
    )
    assert main(["check-content", "--root", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "cards/roofline/audit.md: figures: '3.9 ms' is neither declared under figures nor quoted" in err


def _quote_problem(card, quoted: str, source: str) -> str | None:  # type: ignore[no-untyped-def]
    """Why a quote is not acceptable, or None: its text must be on the card word for word, and
    its source must be a seed or name one of the card's sources: the whole entry or a leading
    part that ends where the entry's own punctuation does ("Pope et al., 2022" names "Pope et
    al., 2022, Efficiently Scaling ...", "NVIDIA H100 ... data sheet" names "NVIDIA H100 ... data
    sheet (2023), H100 SXM: ..."; "2022" or "Pope" names nothing)."""
    where = f"{card.path}: quote {quoted!r} from {source!r}"
    if quoted not in card_text(card):
        return f"{where} is not on the card"
    if source in SEEDS:
        return None
    for cited in card.sources:
        if cited == source or (
            cited.startswith(source) and cited[len(source) :].startswith((",", ":", " ("))
        ):
            return None
    return f"{where} names none of the card's sources ({'; '.join(card.sources)}) and no seed"


QUOTES = [(c, quoted, source) for c in BANK.cards for quoted, source in c.quotes.items()]


@pytest.mark.parametrize(("bank_card", "quoted", "source"), QUOTES, ids=[f"{c.id}:{q}" for c, q, _ in QUOTES])
def test_every_quote_is_on_its_card_and_names_one_of_its_sources(bank_card, quoted: str, source: str) -> None:  # type: ignore[no-untyped-def]
    assert _quote_problem(bank_card, quoted, source) is None, _quote_problem(bank_card, quoted, source)


def test_the_bank_quotes_something_and_the_quote_check_can_fail() -> None:
    assert len(QUOTES) >= 100
    parsed, _ = parse_card(CARD.format(claim="x", question="", why="y"), "cards/x/audit.md")
    assert _quote_problem(parsed, "3.35 TB/s", "Pope et al., 2022") is None
    assert _quote_problem(parsed, "3.35 TB/s", "seed 002") is None
    assert _quote_problem(parsed, "3.35 TB/s", "2022") == (
        "cards/x/audit.md: quote '3.35 TB/s' from '2022' names none of the card's sources "
        "(Pope et al., 2022, Efficiently Scaling Transformer Inference (arXiv:2211.05102)) and no seed"
    )
    assert "names none" in str(_quote_problem(parsed, "3.35 TB/s", "Pope"))
    assert _quote_problem(parsed, "9.9 ms", "seed 000") == (
        "cards/x/audit.md: quote '9.9 ms' from 'seed 000' is not on the card"
    )


def test_the_audit_refuses_a_source_that_is_only_a_fragment_of_one() -> None:
    text = CARD.format(claim="x", question="", why="y").replace('"Pope et al., 2022"', '"2022"')
    parsed, _ = parse_card(text, "cards/x/audit.md")
    assert [str(p) for p in audit_card(parsed)] == [  # type: ignore[arg-type]
        "cards/x/audit.md: quotes.3.35 TB/s: source '2022' is neither one of the card's sources nor a "
        "seed (seed 000, seed 001, seed 002)"
    ]

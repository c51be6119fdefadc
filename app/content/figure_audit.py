"""Every figure on a card is either computed (declared under `figures:`) or quoted (`quotes:`).

A *figure* is a number with a unit or a multiplier: `2.62 GB`, `512 KiB`, `3.35 TB/s`,
`989 TFLOPS`, `295 FLOP/byte`, `4.02 ms`, `24x`, `31-fold`, `60%`, `248 tokens/s`, `6.74B`
parameters. Bare numbers are not figures (layer counts, years, arXiv ids, list indices), nor
are model names (`Llama-2-7B`), dtypes (`fp16`, `8-bit`) or counts of tokens and sequences
that a question sets up. The audit reports, per card, each figure that is neither one of its
declared figures nor one of its quotes, and checks that quotes appear on the card and name a
source the card cites or a seed.

Used by `kvprep check-content` and tests/content/test_figure_audit.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from app.content.schema import Card

# Units and multipliers, longest first so "GB/s" wins over "GB" and "ms" over "s".
_UNITS = [
    r"tokens/s",
    r"tok/s",
    r"TFLOP/s",
    r"TFLOPS",
    r"TFLOP",
    r"PFLOPS",
    r"GFLOPS",
    r"FLOP/byte",
    r"FLOPs/byte",
    r"FLOPs",
    r"FLOP",
    r"TB/s",
    r"GB/s",
    r"MB/s",
    r"TiB",
    r"GiB",
    r"MiB",
    r"KiB",
    r"TB",
    r"GB",
    r"MB",
    r"KB",
    r"bytes",
    r"ms",
    r"µs",
    r"us",
    r"ns",
    r"s",
    r"%",
    r"x",
    r"×",
    r"-fold",
    r" times",
    r"B",  # a parameter count like 6.74B (only with a decimal or followed by "param"; see below)
    r"M",
]
_NUMBER = r"(?<![\w.,/^-])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?"
_FIGURE = re.compile(_NUMBER + r"(\s?)(" + "|".join(re.escape(u) if u in "%×" else u for u in _UNITS) + r")")
_PARAM_WORD = re.compile(r"\s*(?:parameters|params|param)\b")

SEEDS = {
    "seed 000": "context windows and the KV cache as interview answers (GPT-2 small measurements)",
    "seed 001": "practice questions with answer outlines (sqrt(d_k) runs, model shapes, cache tables)",
    "seed 002": "the NumPy lesson: naive and cached decode loops with work counters",
}


@dataclass(frozen=True)
class Figure:
    text: str  # as written on the card, e.g. "4.02 ms"
    value: str  # the number without thousands separators, e.g. "4.02"
    unit: str  # normalised: "x" for x, ×, -fold and times


def _normalise_unit(unit: str) -> str:
    unit = unit.strip()
    return {"×": "x", "-fold": "x", "times": "x", "tok/s": "tokens/s", "FLOPs/byte": "FLOP/byte"}.get(
        unit, unit
    )


def find_figures(text: str) -> list[Figure]:
    """Numbers with a unit or multiplier in `text`, in order."""
    found: list[Figure] = []
    for match in _FIGURE.finditer(text):
        whole, frac, space, unit = match.group(1), match.group(2) or "", match.group(3), match.group(4)
        end = match.end()
        following = text[end : end + 1]
        if (
            unit not in ("%", "×", " times", "-fold")
            and following
            and (following.isalnum() or following == "_")
        ):
            continue  # "8-bit"-style words, "4096-token", "fp16", "3rd", "12GB"-like ids of other things
        if unit in ("x", "×") and space:
            continue  # "2 x layers x ..." is a product, not a multiplier
        if unit in ("B", "M"):
            # A parameter count: "6.74B", "124M" with a decimal or a "parameters" after it; not "7B".
            if not (frac or _PARAM_WORD.match(text, end)):
                continue
            if match.start() > 0 and text[match.start() - 1] in "-x":
                continue  # "8x7B", "Llama-2-7B"
        if unit == "s" and space == "":
            continue  # "1990s", "4s" as plural
        if unit == "bytes" and not frac and whole in ("1", "2", "4", "8"):
            continue  # an element's width (fp16 is 2 bytes): a definition, not a figure
        if unit in ("FLOPs", "FLOP") and not frac and whole == "2":
            continue  # "2 FLOPs per parameter" (a multiply and an add): the convention, not a figure
        found.append(Figure(match.group(0), (whole + frac).replace(",", ""), _normalise_unit(unit)))
    return found


def card_text(card: Card) -> str:
    return card.search_text() + "\n" + card.notes


def _stated_text(card: Card) -> list[tuple[str, set[tuple[str, str]]]]:
    """The card's text in parts, each with the figures it may repeat without declaring them.

    A common wrong answer's heading is what a candidate says, wrong figures included; its
    explanation may quote those figures back. Everything else is the card's own claim.
    """
    parts: list[tuple[str, set[tuple[str, str]]]] = [
        ("\n".join([card.title, card.question, *card.key_points, *card.tags]), set()),
        ("\n".join(f.question + "\n" + f.answer for f in card.follow_ups), set()),
        (card.notes, set()),
    ]
    for wrong in card.wrong_answers:
        said = {(f.value, f.unit) for f in find_figures(wrong.answer)}
        parts.append((wrong.why, said))
    return parts


@dataclass(frozen=True)
class AuditProblem:
    path: str
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.field}: {self.message}"


def _accounted(card: Card) -> set[tuple[str, str]]:
    """(value, unit) pairs the card declares; a unitless declared figure covers its multiplier."""
    keys: set[tuple[str, str]] = set()
    for text in [*card.figures.values(), *card.quotes]:
        for figure in find_figures(text):
            keys.add((figure.value, figure.unit))
        bare = text.strip().replace(",", "")
        if count := re.fullmatch(r"(\d+(?:\.\d+)?)([BM])", bare):
            keys.add((count[1], count[2]))  # a declared parameter count such as "124M" or "6.74B"
        if re.fullmatch(r"\d+(\.\d+)?", bare):
            keys |= {(bare, "x"), (bare, "bytes")}  # "32" covers "32x"; "327,680" covers "327,680 bytes"
    return keys


def _quote_source_ok(source: str, card: Card) -> bool:
    """A seed, or one of the card's sources: whole, or a leading part that stops at the entry's own
    punctuation ("Pope et al., 2022" names "Pope et al., 2022, Efficiently ..."; "2022" does not)."""
    return source in SEEDS or any(
        s == source or (s.startswith(source) and s[len(source) :].startswith((",", ":", " (")))
        for s in card.sources
    )


def audit_card(card: Card) -> list[AuditProblem]:
    problems: list[AuditProblem] = []
    text = card_text(card)
    for quoted, source in card.quotes.items():
        if quoted not in text:
            problems.append(AuditProblem(card.path, f"quotes.{quoted}", "is quoted but not on the card"))
        if not _quote_source_ok(source, card):
            problems.append(
                AuditProblem(
                    card.path,
                    f"quotes.{quoted}",
                    f"source {source!r} is neither one of the card's sources nor a seed ({', '.join(SEEDS)})",
                )
            )
    accounted = _accounted(card)
    reported: set[str] = set()
    for part, said in _stated_text(card):
        for figure in find_figures(part):
            key = (figure.value, figure.unit)
            if key in accounted or key in said or figure.text in reported:
                continue
            reported.add(figure.text)
            problems.append(
                AuditProblem(
                    card.path,
                    "figures",
                    f"{figure.text!r} is neither declared under figures nor quoted (quotes:) from a source",
                )
            )
    return problems


def audit_declared(card: Card, computed: dict[str, str]) -> list[AuditProblem]:
    """Declared figures must be computed values, printed on the card as declared."""
    problems: list[AuditProblem] = []
    text = card_text(card)
    for name, value in card.figures.items():
        if name not in computed:
            problems.append(AuditProblem(card.path, f"figures.{name}", "no such computed figure"))
        elif value != computed[name]:
            problems.append(
                AuditProblem(
                    card.path, f"figures.{name}", f"card says {value!r}, computed {computed[name]!r}"
                )
            )
        elif value not in text:
            problems.append(
                AuditProblem(card.path, f"figures.{name}", f"{value!r} is declared but not on the card")
            )
    return problems


def audit_bank(cards: list[Card], computed: dict[str, str]) -> list[AuditProblem]:
    problems: list[AuditProblem] = []
    for card in cards:
        problems += audit_declared(card, computed)
        problems += audit_card(card)
    return problems

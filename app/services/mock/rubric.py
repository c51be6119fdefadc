"""The scored rubric of a mock interview's answers: five signals rated 1 (very weak) to 4 (very
strong), each with the evidence behind it, and the rule that combines them, stated on the report.

What each signal reads, for a card question the clock reached (RubricSignal):

- correct: is what was said right? 1: the answer echoed a common wrong answer (a numeric or
  multiple-choice answer: checked wrong); 2: only the follow-up answer echoed one, or nothing in
  the answer matched a key point (a pick: partly right); 3: right as far as it went, without the
  card's first key point (key points are in order of importance); 4: right, the first point
  included (a checked answer: right).
- complete: the share of the key points the user ticked as covered: none 1, under half 2, half
  or more 3, all 4. Not rated for a numeric or multiple-choice question (nothing to tick).
- quantitative: the figures the answers gave, checked against the key points' (within 5%): 1 none
  where the strong answer has some, 2 figures but none of its, 3 some of them, 4 one for every key
  point that has a figure. Not rated when the strong answer has none. A citation's year, 0 and 1
  are no figures. A numeric problem: 4 right, 2 a wrong number, 1 none.
- trade_offs: the follow-up covered (the user's tick) and a cost or an alternative weighed in the
  answers ("but", "instead", "at the cost of" ...): both 4, the follow-up alone 3, the weighing
  alone 2, neither 1.
- clear: the typed words: 4, less one for each of: under 8 words or over 150, a hedge ("I think",
  "maybe", "not sure" ...), a sentence of over 40 words; at least 1, and 1 when nothing was typed
  (not rated for a numeric or multiple-choice question whose follow-up went unanswered).

The user may correct any rated signal (app/services/mock/corrections.py): the correction counts
in the overall, and the computed rating is kept beside it. The rubric is read beside the score,
it does not change it nor what went into spaced repetition.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field

from app.enums import MockItemKind, RubricSignal
from app.models import MockItem
from app.services.mock.prompt import figures, short
from app.services.mock.prompt import value as _value

RATING_NAMES = {1: "very weak", 2: "weak", 3: "strong", 4: "very strong"}
SIGNAL_NAMES = {
    RubricSignal.CORRECT: "Correct",
    RubricSignal.COMPLETE: "Complete",
    RubricSignal.QUANTITATIVE: "Quantitative",
    RubricSignal.TRADE_OFFS: "Trade-offs",
    RubricSignal.CLEAR: "Clear",
}
CORRECT_WEIGHT = 2  # a wrong claim weighs more than a missing figure
WRONG_CAP = 2  # the overall when `correct` is 1 is never above this
OVERALL_RULE = (
    "Each answer's overall rating is the mean of its rated signals, Correct counted twice, rounded to "
    "the nearest rating (a half rounds down), and never above 2 (weak) when Correct is 1: a wrong claim "
    "outweighs the rest. The interview's overall is the mean of its questions' overall ratings, rounded "
    "the same way; questions the clock never reached are left out. 1 is very weak, 2 weak, 3 strong, "
    "4 very strong. A rating you corrected counts as corrected; the computed one stays beside it."
)
FIGURE_TOLERANCE = 0.05
SHORT_FROM, LONG_FROM, RUN_ON_FROM = 8, 150, 40

_WEIGHING = re.compile(
    r"\b(trade-?offs?|but|however|whereas|instead|unless|otherwise|versus|vs|in exchange|on the other hand"
    r"|at the (?:cost|expense|price) of|downside|drawback|costs?|cheaper|slower|faster)\b",
    re.IGNORECASE,
)
_HEDGE = re.compile(
    r"\b(i think|i guess|i believe|maybe|perhaps|probably|not sure|sort of|kind of|something like)\b",
    re.IGNORECASE,
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


@dataclass(frozen=True)
class WrongMatch:
    """A common wrong answer an answer echoed (app/services/wrong_answers.py)."""

    answer: str
    why: str
    words: list[str]  # the shared content words ([] for a picked option)
    where: str  # answer | follow_up | option


@dataclass(frozen=True)
class Answered:
    """What the rubric reads of one question the clock reached."""

    kind: str
    answer: str
    follow_up_answer: str
    key_points: Sequence[str]
    covered: AbstractSet[int]  # the key points the user ticked
    follow_up_covered: bool
    echoed: Sequence[WrongMatch] = ()
    checked: bool | None = None  # numeric and multiple choice: checked right
    partial: bool = False  # multiple choice: partly right


@dataclass(frozen=True)
class SignalRating:
    signal: str  # a RubricSignal
    name: str
    rating: int | None  # 1-4, the user's correction if any; None: this question gives nothing to rate
    computed: int | None  # what the rubric computed
    corrected: bool
    reason: str  # the rule that gave the computed rating
    evidence: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Rubric:
    signals: list[SignalRating]
    overall: int  # with the user's corrections
    overall_name: str
    computed_overall: int  # from the computed ratings alone


def _quote(text: str, at: re.Match[str], words: int = 4) -> str:
    before = text[: at.start()].split()[-words:]
    after = text[at.end() :].split()[:words]
    return "“" + " ".join([*before, at.group(0), *after]) + "”"


def _same_figure(a: str, b: str) -> bool:
    x, y = _value(a), _value(b)
    return abs(x - y) <= FIGURE_TOLERANCE * max(abs(x), abs(y))


def _correct(a: Answered) -> tuple[int, str, list[str]]:
    if a.kind in (MockItemKind.NUMERIC, MockItemKind.CHOICE):
        if not a.answer:
            return 1, "no answer given", []
        picked = [f"Your answer: “{a.answer}”"]
        if a.checked:
            return 4, "checked right", picked
        if a.partial:
            return 2, "checked partly right", picked
        return 1, "checked wrong", picked + [f"Picked a wrong option: “{m.answer}”" for m in a.echoed]
    if not a.answer:
        return 1, "no answer given", []
    evidence = [
        f"Echoed a common wrong answer in your {'follow-up answer' if m.where == 'follow_up' else 'answer'}: "
        f"“{m.answer.strip().strip(chr(34))}” (matched on {', '.join(m.words)})"
        for m in a.echoed
    ]
    if any(m.where == "answer" for m in a.echoed):
        return 1, "your answer echoed a common wrong answer", evidence
    if a.echoed:
        return 2, "your follow-up answer echoed a common wrong answer", evidence
    evidence.append("No common wrong answer echoed")
    if not a.covered:
        return 2, "nothing in the answer matched a key point", evidence
    first = f"key point 1: “{short(a.key_points[0])}”"
    if 0 not in a.covered:
        return 3, "right as far as it went, without the most important point", [*evidence, "Missed " + first]
    return 4, "right, the most important point included", [*evidence, "Covered " + first]


def _complete(a: Answered) -> tuple[int | None, str, list[str]]:
    if a.kind != MockItemKind.RECALL or not a.key_points:
        return None, "nothing to tick on this kind of question", []
    n, got = len(a.key_points), len(a.covered)
    evidence = [
        f"{'Covered' if i in a.covered else 'Missed'} key point {i + 1}: “{short(p)}”"
        for i, p in enumerate(a.key_points)
    ]
    rating = 1 if got == 0 else 4 if got == n else 3 if 2 * got >= n else 2
    return rating, f"{got} of {n} key points covered", evidence


def _quantitative(a: Answered) -> tuple[int | None, str, list[str]]:
    if a.kind == MockItemKind.NUMERIC:
        if not a.answer:
            return 1, "no number given", []
        return (
            (4, "the number checked right", [f"You gave {a.answer}"])
            if a.checked
            else (
                2,
                "a number, checked wrong",
                [f"You gave {a.answer}"],
            )
        )
    wanted = {i: figures(p) for i, p in enumerate(a.key_points) if figures(p)}
    if a.kind != MockItemKind.RECALL or not wanted:
        return None, "the strong answer has no figure to check", []
    given = figures(a.answer) + figures(a.follow_up_answer)
    if not given:
        return (
            1,
            "the strong answer has figures and yours gave none",
            [f"Key point {i + 1} has {', '.join(f)}" for i, f in wanted.items()],
        )
    met = {i for i, f in wanted.items() if any(_same_figure(g, w) for g in given for w in f)}
    evidence = [f"You gave {', '.join(given)}"] + [
        f"{'✓' if i in met else '✗'} key point {i + 1}'s {', '.join(f)}" for i, f in wanted.items()
    ]
    if not met:
        return 2, "figures given, none of the strong answer's", evidence
    if len(met) < len(wanted):
        return 3, f"the figures of {len(met)} of {len(wanted)} key points", evidence
    return 4, "a figure for every key point that has one", evidence


def _trade_offs(a: Answered) -> tuple[int, str, list[str]]:
    found = [_quote(t, m) for t in (a.answer, a.follow_up_answer) for m in _WEIGHING.finditer(t)]
    weighed = list(dict.fromkeys(found))[:3]  # the same words in both answers, quoted once
    evidence = [
        "Follow-up covered (your tick)" if a.follow_up_covered else "Follow-up not covered",
        f"Weighed a cost or an alternative: {'; '.join(weighed)}"
        if weighed
        else "No cost or alternative weighed",
    ]
    if a.follow_up_covered and weighed:
        return 4, "the follow-up covered, and a cost or alternative weighed", evidence
    if a.follow_up_covered:
        return 3, "the follow-up covered, no cost or alternative weighed", evidence
    if weighed:
        return 2, "a cost or alternative weighed, the follow-up not covered", evidence
    return 1, "neither the follow-up covered nor a cost or alternative weighed", evidence


def _clear(a: Answered) -> tuple[int | None, str, list[str]]:
    texts = [a.follow_up_answer] if a.kind != MockItemKind.RECALL else [a.answer, a.follow_up_answer]
    text = "\n".join(t for t in texts if t)
    if not text:
        if a.kind != MockItemKind.RECALL:
            return None, "nothing typed", []
        return 1, "nothing typed", []
    words = len(text.split())
    longest = max(len(s.split()) for s in _SENTENCE_END.split(text) if s.strip())
    hedges = sorted({m.group(0).lower() for m in _HEDGE.finditer(text)})
    faults = []
    if words < SHORT_FROM:
        faults.append(f"{words} words: too short to explain")
    elif words > LONG_FROM:
        faults.append(f"{words} words: over {LONG_FROM}")
    if hedges:
        faults.append("hedged: " + ", ".join(f"“{h}”" for h in hedges))
    if longest > RUN_ON_FROM:
        faults.append(f"a sentence of {longest} words")
    evidence = faults or [f"{words} words, no hedge, longest sentence {longest} words"]
    reason = f"{len(faults)} of the 3 faults" if faults else "none of the 3 faults (length, hedging, run-on)"
    return max(1, 4 - len(faults)), reason, evidence


_RATERS = {
    RubricSignal.CORRECT: _correct,
    RubricSignal.COMPLETE: _complete,
    RubricSignal.QUANTITATIVE: _quantitative,
    RubricSignal.TRADE_OFFS: _trade_offs,
    RubricSignal.CLEAR: _clear,
}


def _round(x: float) -> int:
    return math.ceil(x - 0.5)  # a half rounds down


def overall(ratings: Mapping[str, int | None]) -> int:
    """The overall rating of one answer from its signals' (OVERALL_RULE)."""
    weighted = [(r, CORRECT_WEIGHT if s == RubricSignal.CORRECT else 1) for s, r in ratings.items() if r]
    result = _round(sum(r * w for r, w in weighted) / sum(w for _, w in weighted))
    return min(result, WRONG_CAP) if ratings.get(RubricSignal.CORRECT) == 1 else result


def interview_overall(rubrics: Iterable[Rubric]) -> int | None:
    """The interview's overall rating: the mean of its questions' (None: no question rated)."""
    ratings = [r.overall for r in rubrics]
    return _round(sum(ratings) / len(ratings)) if ratings else None


def rate(a: Answered, corrections: Mapping[str, int] | None = None) -> Rubric:
    """The rubric of one answer; `corrections` are the user's ratings by signal, kept beside the computed."""
    corrections = corrections or {}
    signals = []
    for signal, rater in _RATERS.items():
        computed, reason, evidence = rater(a)
        fixed = corrections.get(signal) if computed is not None else None
        signals.append(
            SignalRating(
                signal=signal,
                name=SIGNAL_NAMES[signal],
                rating=fixed or computed,
                computed=computed,
                corrected=fixed is not None and fixed != computed,
                reason=reason,
                evidence=evidence,
            )
        )
    final = overall({s.signal: s.rating for s in signals})
    return Rubric(
        signals=signals,
        overall=final,
        overall_name=RATING_NAMES[final],
        computed_overall=overall({s.signal: s.computed for s in signals}),
    )


def rubric_of(item: MockItem, key_points: Sequence[str], echoed: Sequence[WrongMatch]) -> Rubric:
    """The rubric of a scored mock question the clock reached, with the user's corrections."""
    answered = Answered(
        kind=item.kind,
        answer=item.answer or "",
        follow_up_answer=item.follow_up_answer or "",
        key_points=key_points,
        covered=set(item.covered or []),
        follow_up_covered=bool(item.follow_up_covered),
        echoed=echoed,
        checked=item.correct,
        partial=bool((item.response or {}).get("partial")),
    )
    return rate(answered, item.rubric_corrections)

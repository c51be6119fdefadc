"""The interviewer's next prompt after a typed answer: chosen from what the answer said.

The rule, first that applies (deterministic for a given answer, since the matcher is):

1. nudge: the answer misses a key point and echoes one of the card's common wrong answers
   (app/services/wrong_answers.py): "You said ...", followed by the follow-up that probes the most
   important missed key point. An answer that covered every key point shares words with the wrong
   answers (they are about the same things) but is not nudged: it earned the harder question;
2. wrong_number: the answer states a quantity the key points contradict ("You said 256 KiB per
   token; check how you got it", app/services/mock/mistakes.py), covered or not: a wrong figure
   is wrong;
3. probe: a key point was missed (key points are in order of importance): the follow-up that
   probes the first missed point, a `same` one before a `harder` one, in file order;
4. number: the card's key points carry a number and the answer gave none: a request for it;
5. harder: every key point was covered: the card's first `harder` follow-up (its last
   follow-up when it has none).

A missed point that no follow-up probes falls to the number request, then to the card's first
`same` follow-up, said as such. The prompt keeps why it was asked, for the report.
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet

from app.enums import FollowUpDifficulty
from app.services.card_content import CardContent, FollowUp
from app.services.key_point_matcher import plain
from app.services.mock.mistakes import wrong_figure
from app.services.mock.prompt import Prompt, blank_figures, figures, probing, short
from app.services.wrong_answers import matches_wrong_answer

__all__ = ["Prompt", "next_prompt"]


def _from(f: FollowUp, kind: str, reason: str) -> Prompt:
    return Prompt(f.question, f.answer, kind, reason, list(f.probes), f.difficulty)


def next_prompt(
    asked: CardContent, text: str, covered: AbstractSet[int], common: AbstractSet[str] = frozenset()
) -> Prompt:
    """The next prompt for an answer `text` that covered the key points `covered` (indices)."""
    points, follow_ups = asked.key_points, asked.follow_ups
    missed = [i for i in range(len(points)) if i not in covered]
    probe = next(((i, f) for i in missed if (f := probing(follow_ups, i)) is not None), None)
    first_same = next((f for f in follow_ups if f.difficulty == FollowUpDifficulty.SAME), follow_ups[0])
    for wrong in asked.wrong_answers if missed else ():
        if text.strip() and matches_wrong_answer(text, wrong.answer, common):
            said = wrong.answer.strip().strip('"“”')
            then = probe[1] if probe else first_same
            return Prompt(
                f"You said “{said}” What does that leave out? {then.question}",
                f"{wrong.why}\n\n{then.answer}",
                "nudge",
                f"asked because your answer echoed a common wrong answer: “{said}”",
                list(then.probes),
                then.difficulty,
            )
    figure = wrong_figure(asked, text)
    if figure is not None:
        return figure
    if probe is not None:
        i, f = probe
        return _from(f, "probe", f"asked because you did not mention key point {i + 1}: “{short(points[i])}”")
    numbered = [i for i, p in enumerate(points) if figures(p)]
    if numbered and not figures(text):
        i = numbered[0]
        blank = blank_figures(plain(points[i]))
        return Prompt(
            f"Can you put a number on it? Fill in the figures: “{blank}”",
            points[i],
            "number",
            f"asked because the strong answer has a number (key point {i + 1}) and yours gave none",
            [i],
        )
    if missed:
        i = missed[0]
        return _from(
            first_same,
            "follow_up",
            f"asked because you did not mention key point {i + 1}: “{short(points[i])}”; "
            "no follow-up asks about it directly",
        )
    harder = [f for f in follow_ups if f.difficulty == FollowUpDifficulty.HARDER] or [follow_ups[-1]]
    return _from(harder[0], "harder", "asked because you covered every key point: a harder question")

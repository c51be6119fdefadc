"""The Run of beam-search: one search on a seeded grader's model, its hypotheses beside the reference's.

The submission gets the same kind of model the battery hands it (graders/checks/beam_search_model.py,
a Remote: its calls run here and are recorded here). The page shows three outputs: the hypotheses
with their final scores (the prompt, a bar, the generated tokens), the rows the model was asked to
step at each position (each row's tokens after the prompt), and how many prefill and step calls
the search made, each beside the reference's.
"""

from __future__ import annotations

import random
from typing import Any

from graders.checks.beam_search_cases import Observed, Search, parse_result, reference, shown
from graders.checks.beam_search_model import submission_model
from graders.checks.serving_common import call_entry
from graders.examples.spec import SEED, Compared, Example, InvalidRunInput, Param, RunSpec
from graders.sandbox.protocol import SubmissionLink


def search_for(values: dict[str, Any]) -> Search:
    py = random.Random(values["seed"])
    vocab = values["vocab"]
    eos = values["eos_id"]
    return Search(
        seed=values["seed"],
        vocab=vocab,
        prompt=tuple(py.randrange(vocab) for _ in range(values["prompt_length"])),
        beam_width=values["beam_width"],
        max_new_tokens=values["max_new_tokens"],
        eos_id=None if eos < 0 else eos,
        length_penalty=values["length_penalty"],
    )


def _rows(seen: Observed) -> list[str]:
    return [" / ".join(" ".join(map(str, r)) for r in sorted(step)) for step in seen.steps]


def _calls(seen: Observed) -> list[str]:
    return [str(seen.prefills), str(len(seen.steps)), seen.refusals[0] if seen.refusals else "none"]


def _case(session: SubmissionLink, values: dict[str, Any]) -> list[Compared]:
    search = search_for(values)
    model, remote = submission_model(search.seed, search.vocab, search.eos_id)
    args, kwargs = search.arguments()
    value = call_entry(session, "beam_search", remote, *args, **kwargs)
    got = Observed.of(parse_result(value, search.describe()), model)
    want = reference(search)
    prompt = len(search.prompt)
    steps = max(len(got.steps), len(want.steps))
    return [
        Compared(
            f"{search.describe()}: hypotheses [prompt | generated] final score",
            [shown([h], prompt) for h in got.result],
            [shown([h], prompt) for h in want.result],
            exact=True,
            labels=tuple(f"hypothesis {i}" for i in range(max(len(got.result), len(want.result)))),
        ),
        Compared(
            "rows stepped at each position (tokens after the prompt)",
            _rows(got),
            _rows(want),
            exact=True,
            labels=tuple(f"position {i + 2}" for i in range(steps)),
        ),
        Compared(
            "calls of the model",
            _calls(got),
            _calls(want),
            exact=True,
            labels=("prefill calls", "step calls", "refused calls"),
        ),
    ]


def _fits(values: dict[str, Any]) -> None:
    if values["eos_id"] >= values["vocab"]:
        raise InvalidRunInput(
            f"eos_id must be below vocab ({values['vocab']}), or -1 for none, got {values['eos_id']}",
            "eos_id",
        )
    if values["beam_width"] > values["vocab"] - 1:
        raise InvalidRunInput(
            f"beam_width must be at most vocab - 1 ({values['vocab'] - 1}), so beam_width live beams "
            "can always be chosen",
            "beam_width",
        )


BEAM_SEARCH = RunSpec(
    slug="beam-search",
    entry_point="beam_search",
    summary=(
        "Hands beam_search the grader's model (log-probs on a grid of 1/8 that depend on each row's whole "
        "history) and a seeded prompt of prompt_length tokens; shows the hypotheses with their scores, the "
        "rows the model stepped at each position and the calls made, beside the reference's."
    ),
    params=(
        Param("vocab", "Vocabulary size V", 8, 2, 64),
        Param("prompt_length", "Prompt tokens", 3, 1, 16),
        Param("beam_width", "beam_width", 3, 1, 8),
        Param("max_new_tokens", "max_new_tokens", 4, 1, 12),
        Param("eos_id", "eos_id", 0, -1, 63, "-1: no eos (eos_id=None)"),
        Param("length_penalty", "length_penalty", 1.0, -2.0, 4.0, "1.0: divide by the generated length"),
        SEED,
    ),
    examples=(
        Example(
            "eos present: hypotheses finish and the live beams join",
            {
                "vocab": 8,
                "prompt_length": 3,
                "beam_width": 3,
                "max_new_tokens": 4,
                "eos_id": 0,
                "length_penalty": 1.0,
                "seed": 1,
            },
        ),  # fmt: skip
        Example(
            "no eos, no length penalty: every position runs",
            {
                "vocab": 10,
                "prompt_length": 2,
                "beam_width": 4,
                "max_new_tokens": 5,
                "eos_id": -1,
                "length_penalty": 0.0,
                "seed": 2,
            },
        ),  # fmt: skip
    ),
    case=_case,
    rules=(_fits,),
)

__all__ = ["BEAM_SEARCH"]

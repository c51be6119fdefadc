"""beam-search's inputs and what a search did: `Search` (one call's settings), `Observed` (its answer
and the model's record of the calls), and how the rule's, a variant's and a submission's compare.

The model's record is kept on the grader's side (graders/checks/beam_search_model.py, handed to the
submission as a Remote), so `Observed` of a submission holds what its model saw, not what it says.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from graders.checks import beam_search_variants as variants
from graders.checks.beam_search_model import HistoryModel
from graders.checks.beam_search_variants import Slip
from graders.checks.report import Mismatch
from graders.checks.serving_common import Rng
from graders.reference.beam_search import beam_search

Style = Literal["keywords", "positional", "defaults"]  # how the optional arguments are passed
Hypotheses = list[tuple[tuple[int, ...], float]]
SCORE_TOLERANCE = 1e-6  # relative; the log-probs are exact in float32, the divisions nearly so


@dataclass(frozen=True)
class Search:
    seed: int
    vocab: int
    prompt: tuple[int, ...]
    beam_width: int
    max_new_tokens: int
    eos_id: int | None = None
    length_penalty: float = 1.0
    style: Style = "keywords"

    def describe(self) -> str:
        head = (
            f"beam_search(model (V={self.vocab}), {list(self.prompt)}, {self.beam_width}, "
            f"{self.max_new_tokens}"
        )
        if self.style == "defaults":
            return head + ")"
        if self.style == "positional":
            return head + f", {self.eos_id}, {self.length_penalty})"
        return head + f", eos_id={self.eos_id}, length_penalty={self.length_penalty})"

    def arguments(self) -> tuple[list[Any], dict[str, Any]]:
        """What follows the model in the submission's call."""
        args: list[Any] = [list(self.prompt), self.beam_width, self.max_new_tokens]
        if self.style == "positional":
            return [*args, self.eos_id, self.length_penalty], {}
        if self.style == "defaults":
            return args, {}
        return args, {"eos_id": self.eos_id, "length_penalty": self.length_penalty}

    def model(self, *, wrap: bool = False) -> HistoryModel:
        return HistoryModel(self.seed, self.vocab, self.eos_id, wrap=wrap)


@dataclass
class Observed:
    result: Hypotheses
    prefills: int
    steps: list[list[tuple[int, ...]]]  # per step, the rows' generated tokens, in the order given
    refusals: list[str]

    @classmethod
    def of(cls, result: Sequence[tuple[Sequence[int], float]], model: HistoryModel) -> Observed:
        return cls([(tuple(t), float(s)) for t, s in result], model.prefills, model.steps, model.refusals)


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=SCORE_TOLERANCE, abs_tol=SCORE_TOLERANCE)


def same_result(a: Hypotheses, b: Hypotheses) -> bool:
    return len(a) == len(b) and all(
        ta == tb and _close(sa, sb) for (ta, sa), (tb, sb) in zip(a, b, strict=True)
    )


def same(a: Observed, b: Observed) -> bool:
    """The same answer from the same calls: one prefill each, the same rows at every step (in any order)."""
    return (
        same_result(a.result, b.result)
        and a.prefills == b.prefills
        and [sorted(s) for s in a.steps] == [sorted(s) for s in b.steps]
        and bool(a.refusals) == bool(b.refusals)
    )


def reference(search: Search) -> Observed:
    """The rule's record of `search`. The explicit walk (Python tuples): on a few beams of a small
    vocabulary it is several times faster than one torch sort, and tested equal to it, ties
    included (tests/graders/reference/test_beam_search_walks.py); a verdict draws some fifty."""
    model = search.model()
    s = search
    return Observed.of(
        beam_search(
            model, s.prompt, s.beam_width, s.max_new_tokens, s.eos_id, s.length_penalty, explicit=True
        ),
        model,
    )


def variant(search: Search, slip: Slip) -> Observed:
    model = search.model()
    s = search
    result = variants.search(
        model, s.prompt, s.beam_width, s.max_new_tokens, s.eos_id, s.length_penalty, slip
    )
    return Observed.of(result, model)


def draw(make: Callable[[], Search], telling: Sequence[Slip], tries: int = 300) -> tuple[Search, Observed]:
    """A search from `make` on which every mistake in `telling` does something the rule does not."""
    for _ in range(tries):
        search = make()
        want = reference(search)
        if all(not same(variant(search, slip), want) for slip in telling):
            return search, want
    raise RuntimeError(f"no telling search for {[s.name for s in telling]}")  # the check's bug


def random_search(
    rng: Rng,
    *,
    eos: bool | None = None,
    style: Style = "keywords",
    penalty: float | None = None,
    width: tuple[int, int] = (2, 4),
    length: tuple[int, int] = (2, 6),
) -> Search:
    """Settings that differ from each other (so a swap shows) with a small vocabulary (so beams meet)."""
    py = rng.py
    vocab = py.randint(6, 11)
    beam_width = py.randint(*width)
    has_eos = py.random() < 0.7 if eos is None else eos
    eos_id = py.randrange(vocab) if has_eos and style != "defaults" else None
    if penalty is None:
        penalty = py.choice((1.0, 0.5, 2.0, 0.0, 1.5)) if style != "defaults" else 1.0
    return Search(
        seed=py.randrange(2**31),
        vocab=vocab,
        prompt=tuple(py.randrange(vocab) for _ in range(py.randint(1, 4))),
        beam_width=beam_width,
        max_new_tokens=py.randint(*length),
        eos_id=eos_id,
        length_penalty=penalty,
        style=style,
    )


def shown(result: Hypotheses, prompt_length: int) -> str:
    """'[5 2 | 7 0] -0.625, ...': the prompt, a bar, the generated tokens, the final score."""
    if not result:
        return "no hypotheses"
    parts = []
    for tokens, score in result:
        head, tail = tokens[:prompt_length], tokens[prompt_length:]
        parts.append(f"[{' '.join(map(str, head))} | {' '.join(map(str, tail))}] {score:.4g}")
    return ", ".join(parts)


def parse_result(value: Any, what: str) -> Hypotheses:
    """The submission's answer as hypotheses, or a failed test that says what came back."""
    if not isinstance(value, list | tuple):
        raise Mismatch(f"{what} should return a list of (tokens, score) pairs, got {type(value).__name__}")
    out: Hypotheses = []
    for i, pair in enumerate(value):
        if not isinstance(pair, list | tuple) or len(pair) != 2:
            raise Mismatch(f"{what}: item {i} should be a (tokens, score) pair, got {pair!r:.100}")
        tokens, score = pair
        if not isinstance(tokens, list | tuple) or not all(type(t) is int for t in tokens):
            raise Mismatch(
                f"{what}: hypothesis {i}'s tokens should be a list of Python ints (use .tolist()), "
                f"got {tokens!r:.100}"
            )
        if type(score) not in (float, int) or not math.isfinite(score):
            raise Mismatch(
                f"{what}: hypothesis {i}'s score should be a finite Python float (use float(...)), "
                f"got {type(score).__name__}: {score!r:.60}"
            )
        out.append((tuple(tokens), float(score)))
    return out

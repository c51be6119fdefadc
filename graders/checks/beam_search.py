"""beam-search: beam search on the grader's model, reordering the cache instead of recomputing.

The submission's beam_search gets the grader's model (graders/checks/beam_search_model.py) as a
`Remote` (graders/sandbox/remote.py): its prefill, step and reorder run in the grader's process,
which counts the calls and records the rows of every step where the submission cannot reach. Its
log-probs depend on each row's whole history, so a missing or wrong reorder changes the answer,
and lie on a grid of 1/8, so sums are exact and ties (which the rule breaks to the lower beam,
then the lower token) happen in most searches.

Each search is judged by everything the model saw beside the rule's: the hypotheses (tokens
exactly, final scores to 1e-6), one prefill, the live beams' rows at every step after the first
position (one step per position, one token per live beam), and no refused call. One named test
per rule draws settings until each mistake the test is about does something the rule does not
(graders/checks/beam_search_cases.py, `draw`); random settings check the rules together, with
the optional arguments by keyword, by position and left out. Once every test ran, a failed
submission is compared with the named mistakes (graders/checks/beam_search_variants.py), each
run on a fresh model of the same seed: a mistake whose record equals the submission's on every
search is named. The verdict ends with the hypotheses of one fixed search beside the reference's.

No search's settings depend on an answer, so every search is drawn and queued before the first is
checked (`Plan`), and all go out in one round trip: the model's callbacks (prefill, step, reorder)
cross the socket inside it, but the verdict pays one request instead of one per search. The rule's
record of each search is computed once, when it is drawn, and kept for naming mistakes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

from graders.checks.beam_search_cases import (
    Observed,
    Search,
    Style,
    draw,
    parse_result,
    random_search,
    reference,
    same,
    same_result,
    shown,
    variant,
)
from graders.checks.beam_search_model import HistoryModel, submission_model
from graders.checks.beam_search_variants import Slip, mistake_sentence
from graders.checks.report import CheckReport, Mismatch, run_test
from graders.checks.serving_common import Rng, figure_test
from graders.sandbox.protocol import Pending, SubmissionError, SubmissionLink
from graders.sandbox.remote import Remote

SLUG = "beam-search"
ENTRY_POINT = "beam_search"
# The sentences are the Slips' values, so the ids are the Slip names (graders/mistakes.py);
# challenge.yaml's mistake_hints are keyed by them.
NAMED_MISTAKES = {s.name: mistake_sentence(s) for s in Slip}
KNOWN_MISTAKES = tuple(NAMED_MISTAKES.values())
__all__ = ["ENTRY_POINT", "KNOWN_MISTAKES", "NAMED_MISTAKES", "SLUG", "run"]

Maker = Callable[[Rng], Search]


def _searches(**kw: object) -> Maker:
    return lambda rng: random_search(rng, **kw)  # type: ignore[arg-type]


# (test name, the rule in a sentence for the verdict, the settings it draws, the mistakes each of
# its searches must tell apart from the rule: one search per group).
RULES: tuple[tuple[str, str, Maker, tuple[tuple[Slip, ...], ...]], ...] = (
    (
        "the first position grows one beam, the prompt, into beam_width different beams",
        "the search starts from one beam, the prompt, with score 0",
        _searches(eos=False, length=(1, 3)),
        ((Slip.DUPLICATE_START,),),
    ),
    (
        "every live beam's proposals compete in one sort, highest score first",
        "all beams' (b, t) proposals are sorted together by s_b + log_probs[b, t]",
        _searches(eos=False, length=(3, 5)),
        ((Slip.PER_BEAM_BEST,),),
    ),
    (
        "equal scores go to the lower beam, then the lower token",
        "ties are broken to the lower b, then the lower t",
        _searches(),
        ((Slip.TIES_REVERSED,),),
    ),
    (
        "the cache is reordered to the chosen beams' parents before each step",
        "new row i of the cache must hold the history of the beam that live beam i extends",
        _searches(eos=False, length=(3, 5)),
        ((Slip.NO_REORDER,),),
    ),
    (
        "one prefill, then one step per position after the first, one token for each live beam",
        "the search calls prefill once and steps the reordered cache, never recomputing",
        _searches(length=(2, 4)),
        ((Slip.PREFILL_AGAIN,),),
    ),
    (
        "eos finishes a hypothesis only within the first beam_width ranks; "
        "the walk goes on to beam_width live beams",
        "an eos ranked beam_width or lower is dropped, and finishing one does not cost a live beam",
        _searches(eos=True, width=(2, 4), length=(2, 6)),
        ((Slip.EOS_ANY_RANK,), (Slip.EOS_TAKES_SLOT,)),
    ),
    (
        "the search stops once beam_width hypotheses have finished",
        "after a position's walk, beam_width finished hypotheses end the search",
        _searches(eos=True, length=(5, 8)),
        ((Slip.NO_EARLY_STOP,),),
    ),
    (
        "at the end the live beams join the finished hypotheses",
        "whether the search stopped early or ran out of positions, the live beams are ranked too",
        _searches(),
        ((Slip.DROPS_LIVE,),),
    ),
    (
        "final scores divide by n ** length_penalty, n the generated tokens with eos, "
        "and rank the hypotheses",
        "a hypothesis scores its sum over n ** length_penalty (n counts eos, not the prompt) "
        "and is ranked by it",
        _searches(eos=True, length=(3, 6)),
        ((Slip.PENALTY_WITH_PROMPT,), (Slip.PENALTY_WITHOUT_EOS,), (Slip.RANKS_BY_SUM,)),
    ),
    (
        "eos_id and length_penalty left out: no eos, a penalty of 1.0",
        "without eos_id nothing finishes early, and every hypothesis is divided by its length",
        _searches(style="defaults"),
        ((Slip.DROPS_LIVE, Slip.PENALTY_WITH_PROMPT),),
    ),
    (
        "max_new_tokens=1: one prefill and no step",
        "the first position needs only prefill's log-probs",
        _searches(length=(1, 1)),
        ((Slip.PENALTY_WITH_PROMPT,),),
    ),
)
N_RANDOM = 4
FIXED = Search(
    seed=2025, vocab=10, prompt=(3, 1, 4), beam_width=3, max_new_tokens=5, eos_id=0, length_penalty=1.0
)


@dataclass(eq=False)
class Queued:
    """One search sent (queued) to the submission, with the model it was handed and the rule's
    record of the same search."""

    search: Search
    want: Observed
    model: HistoryModel
    remote: Remote
    answer: Pending | BaseException  # an exception: the call could not even be queued


class Judge:
    """Runs searches on the submission and keeps what each did, for naming a mistake at the end.

    Every search of the battery is queued before the first is checked (`queue`), so they all go out
    in one round trip: no search's settings depend on an answer. A queued call after one that raised
    was never made (its Pending holds that same exception); it is made then, alone (`observe`)."""

    def __init__(self, session: SubmissionLink) -> None:
        self.session = session
        self.seen: list[tuple[Search, Observed, Observed]] = []  # the search, the submission's, the rule's
        self.queued: list[Queued] = []  # in the order they were queued

    def queue(self, search: Search, want: Observed) -> Queued:
        model, remote = submission_model(search.seed, search.vocab, search.eos_id)
        args, kwargs = search.arguments()
        try:
            answer: Pending | BaseException = self.session.call_later(ENTRY_POINT, remote, *args, **kwargs)
        except (SubmissionError, KeyError) as exc:  # in-process, a missing name fails at once
            answer = exc
        self.queued.append(Queued(search, want, model, remote, answer))
        return self.queued[-1]

    def _value(self, queued: Queued) -> object:
        if isinstance(queued.answer, BaseException):
            raise queued.answer
        try:
            return queued.answer.value()
        except (SubmissionError, KeyError) as exc:
            if not self._never_made(queued, exc):
                raise
        args, kwargs = queued.search.arguments()
        return self.session.call(ENTRY_POINT, queued.remote, *args, **kwargs)

    def _never_made(self, queued: Queued, error: BaseException) -> bool:
        """Whether the call before this one in the queue raised this very exception: then the batch
        stopped there and this call never ran."""
        i = self.queued.index(queued)
        before = self.queued[i - 1].answer if i > 0 else None
        if not isinstance(before, Pending):
            return False
        try:
            before.value()
        except BaseException as exc:  # noqa: BLE001 - only its identity matters
            return exc is error
        return False

    def observe(self, queued: Queued) -> Observed:
        try:
            value = self._value(queued)
        except (SubmissionError, KeyError):
            if not self.session.has(ENTRY_POINT):
                raise Mismatch(
                    f"your code defines no top-level `{ENTRY_POINT}`: the grader calls it by that name"
                ) from None
            raise
        seen = Observed.of(parse_result(value, queued.search.describe()), queued.model)
        self.seen.append((queued.search, seen, queued.want))
        return seen

    def expect(self, queued: Queued, rule: str) -> None:
        got = self.observe(queued)
        if same(got, queued.want):
            return
        search = queued.search
        raise Mismatch(f"{search.describe()}: {_difference(search, got, queued.want)}; the rule: {rule}")

    def name_mistakes(self, report: CheckReport) -> None:
        """Name each mistake whose record equals the submission's on every search it answered."""
        if not self.seen or all(same(got, want) for _, got, want in self.seen):
            return
        for slip in Slip:
            if all(same(variant(s, slip), got) for s, got, _ in self.seen):
                report.diagnose(mistake_sentence(slip))


def _rows(rows: Sequence[tuple[int, ...]]) -> str:
    return "[" + ", ".join(" ".join(map(str, r)) for r in sorted(rows)) + "]"


def _difference(search: Search, got: Observed, want: Observed) -> str:
    """The first thing the submission's search did differently, in words."""
    if got.refusals:
        return f"the model refused a call: {got.refusals[0]}"
    if not same_result(got.result, want.result):
        prompt = len(search.prompt)
        return f"you returned {shown(got.result, prompt)}; the rule returns {shown(want.result, prompt)}"
    if got.prefills != want.prefills:
        return f"your search called model.prefill {got.prefills} times (the right answer, recomputed)"
    for position, (mine, rule) in enumerate(zip(got.steps, want.steps, strict=False), start=2):
        if sorted(mine) != sorted(rule):
            return (
                f"at position {position} your search stepped rows {_rows(mine)} (each row's tokens after "
                f"the prompt), the rule's live beams are {_rows(rule)}"
            )
    return (
        f"your search called model.step {len(got.steps)} times, the rule {len(want.steps)} "
        "(once per position after the first, until it stops)"
    )


def _test(judge: Judge, searches: Sequence[Queued], rule: str, checked: list[int]) -> None:
    """Each search against the rule; `checked` gets how many were checked (the last one failed
    when the test fails)."""
    for i, queued in enumerate(searches):
        checked.append(i)
        judge.expect(queued, rule)


class Plan:
    """Every test's searches, drawn in the order the tests use the rng and queued at once.

    A test stops at its first failed search and never draws the rest of its searches, so the next
    test draws from the rng as it was after the failed one's draw: `replan` restores that state and
    draws (and queues) the later tests' searches again, which keeps every verdict what it was when
    each search was drawn and sent alone."""

    def __init__(self, judge: Judge, rng: Rng) -> None:
        self.judge, self.rng = judge, rng
        self.rules: list[list[Queued]] = []
        self.states: list[list[object]] = []  # the rng's state before each rule search's draw
        self.randoms, self.fixed = self._draw(0)

    def _draw(self, first: int) -> tuple[list[Queued], Queued]:
        """Draw and queue the searches of RULES[first:], the random ones and the fixed one."""
        del self.rules[first:], self.states[first:]
        for _, _, make, groups in RULES[first:]:
            states: list[object] = []
            searches: list[Queued] = []
            for telling in groups:
                states.append(self.rng.py.getstate())
                searches.append(self.judge.queue(*draw(partial(make, self.rng), telling)))
            self.rules.append(searches)
            self.states.append(states)
        styles: tuple[Style, ...] = ("keywords", "positional", "keywords", "defaults")
        randoms = [random_search(self.rng, style=style) for style in styles[:N_RANDOM]]
        return [self.judge.queue(search, reference(search)) for search in randoms], self.judge.queue(
            FIXED, reference(FIXED)
        )

    def replan(self, rule: int, checked: int) -> None:
        """Rule `rule` stopped after `checked` searches: draw the later tests as they would be then."""
        if checked < len(self.rules[rule]):
            self.rng.py.setstate(self.states[rule][checked])  # type: ignore[arg-type]
            self.randoms, self.fixed = self._draw(rule + 1)


def _test_figure(judge: Judge, queued: Queued) -> str:
    got = judge.observe(queued)
    want = queued.want
    prompt = len(FIXED.prompt)
    figure = (
        f"{FIXED.describe()}: yours {shown(got.result, prompt)}; the reference's {shown(want.result, prompt)}"
    )
    if not same(got, want):
        raise Mismatch(figure)
    return figure


def run(session: SubmissionLink, seed: int | None = None) -> CheckReport:
    """The battery; `seed` makes a run reproducible (tests), None draws fresh settings (grading)."""
    report = CheckReport()
    rng = Rng(seed)
    judge = Judge(session)
    plan = Plan(judge, rng)
    for i, (name, rule, _, _) in enumerate(RULES):
        checked: list[int] = []
        run_test(report, name, partial(_test, judge, plan.rules[i], rule, checked))
        plan.replan(i, len(checked))
    run_test(
        report,
        f"whole searches equal the reference's on {N_RANDOM} random settings (optional arguments by "
        "keyword, by position and left out)",
        partial(_test, judge, plan.randoms, "every rule of the search at once", []),
    )
    figure_test(
        report,
        "the hypotheses of a fixed search, beside the reference's",
        partial(_test_figure, judge, plan.fixed),
    )
    judge.name_mistakes(report)
    return report

"""logits-processors: repetition, presence/frequency, no-repeat n-gram, temperature, min-p, in order.

Every call is an ordinary process_logits(logits, tokens, ...) compared with
graders.reference.logits_processors: -inf where the rule puts -inf, the other values matching.
Logits lie on a grid of 1/8 away from 0 (so a seen token's sign always decides its penalty) and
the rows repeat ids (so once per id, counts and presence differ). Each test draws its inputs
until every mistake it is about gives another answer than the rule (graders/checks/
logits_processors_variants.py), and min_p is kept away from every p / max(p) so rounding never
decides a token. One B and V for every call: no test can be told from another by its shape.
A wrong answer is compared with the named wrong processors, so the verdict names the mistake.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import torch

from graders.checks import logits_processors_variants as mistakes
from graders.checks.logits_processors_variants import COMPARED, wrong
from graders.checks.report import CheckReport, Mismatch, as_tensor, close, run_test
from graders.checks.serving_common import Rng, call_entry
from graders.sandbox.protocol import SubmissionError, SubmissionLink
from graders.wording import exception_text

SLUG = "logits-processors"
ENTRY_POINT = "process_logits"
KNOWN_MISTAKES = mistakes.KNOWN_MISTAKES
NAMES = (
    "repetition_penalty",
    "presence_penalty",
    "frequency_penalty",
    "no_repeat_ngram_size",
    "temperature",
    "min_p",
)
SHORT = ("rp", "pp", "fp", "n", "t", "mp")  # wrong()'s names for the same arguments
MARGIN = 1e-3  # relative distance kept between min_p and every p / max(p)

Case = tuple[torch.Tensor, list[list[int]], dict[str, Any]]


def same(got: torch.Tensor, want: torch.Tensor) -> bool:
    """-inf exactly where `want` has it, the rest matching."""
    if got.shape != want.shape:
        return False
    mask = torch.isneginf(want)
    if not torch.equal(torch.isneginf(got), mask):
        return False
    return close(got[~mask], want[~mask])


def _wrong(mistake: str | None, case: Case) -> torch.Tensor:
    logits, tokens, kwargs = case
    short = {SHORT[NAMES.index(k)]: v for k, v in kwargs.items()}
    return wrong(mistake, logits, tokens, **short)


def _describe(kwargs: dict[str, Any], positional: bool) -> str:
    if positional:
        return "process_logits(logits, tokens, " + ", ".join(repr(kwargs.get(k)) for k in NAMES) + ")"
    return "process_logits(logits, tokens" + "".join(f", {k}={v!r}" for k, v in kwargs.items()) + ")"


def _first_difference(got: torch.Tensor, want: torch.Tensor) -> tuple[int, int]:
    bad = torch.isneginf(got) != torch.isneginf(want)
    finite = ~torch.isneginf(want) & ~torch.isneginf(got)
    diff = torch.zeros_like(bad)
    diff[finite] = ~torch.isclose(got[finite].double(), want[finite].double(), rtol=1e-4, atol=1e-5)
    b, v = (bad | diff | torch.isnan(got)).nonzero()[0].tolist()
    return int(b), int(v)


class Evidence:
    """Every (case, answer) of this run: a mistake is named only when it explains all of them."""

    def __init__(self) -> None:
        self.seen: list[tuple[Case, torch.Tensor]] = []

    def name(self, report: CheckReport, case: Case, got: torch.Tensor, telling: tuple[str, ...]) -> str:
        want = _wrong(None, case)
        order = list(telling) + [m for m in COMPARED if m not in telling]
        for mistake in order:
            variant = _wrong(mistake, case)
            if same(variant, want) or not same(got, variant):
                continue
            if all(same(_wrong(mistake, c), g) for c, g in self.seen):
                report.diagnose(mistake)
                return f". It looks like {mistake}"
        return ""


def _expect(
    report: CheckReport,
    session: SubmissionLink,
    evidence: Evidence,
    case: Case,
    telling: tuple[str, ...] = (),
    positional: bool = False,
) -> None:
    logits, tokens, kwargs = case
    what = _describe(kwargs, positional)
    want = _wrong(None, case)
    args = [kwargs[k] for k in NAMES] if positional else []
    try:
        value = call_entry(session, "process_logits", logits, tokens, *args, **({} if positional else kwargs))
    except SubmissionError as exc:
        n = kwargs.get("no_repeat_ngram_size", 0)
        short = n and any(len(row) < n for row in tokens)
        if short and exc.type_name in ("RuntimeError", "IndexError", "ValueError"):
            report.diagnose(mistakes.NGRAM_SHORT_ROW)
            raised = exception_text(exc.type_name, exc.message[:100], parens=True)
            raise Mismatch(
                f"{what} raised {raised} on rows of {[len(r) for r in tokens]} tokens: "
                f"{mistakes.NGRAM_SHORT_ROW}"
            ) from None
        raise
    got = as_tensor(value, what)
    if got.shape != want.shape or not got.is_floating_point():
        raise Mismatch(
            f"{what} returned {got.dtype} of shape {tuple(got.shape)}, "
            f"expected float logits {tuple(want.shape)}"
        )
    if same(got, want):
        evidence.seen.append((case, got))
        return
    b, v = _first_difference(got, want)
    row = tokens[b]
    message = (
        f"{what}: row {b} (tokens {row}), token {v} (in the row {row.count(v)} times, logit "
        f"{float(logits[b, v]):g}): got {float(got[b, v]):.5g}, expected {float(want[b, v]):.5g}"
    )
    message += evidence.name(report, case, got, telling)
    evidence.seen.append((case, got))
    raise Mismatch(message)


# --- inputs ----------------------------------------------------------------------------------------


def grid_logits(rng: Rng, B: int, V: int) -> torch.Tensor:
    """(B, V) float32 on odd multiples of 1/16 in (-4, 4): never 0, exact in float32."""
    return (torch.randint(-32, 32, (B, V), generator=rng.torch) * 2 + 1).to(torch.float32) / 16


def rows(rng: Rng, B: int, V: int, ngram: int = 0, lengths: tuple[int, int] = (6, 12)) -> list[list[int]]:
    """B rows of ids drawn from a pool of about V / 2 (so ids repeat); with `ngram`, each row ends
    with a copy of an earlier (ngram - 1)-token stretch, so some token completes a repeated n-gram."""
    pool = rng.py.sample(range(V), max(3, V // 2))
    out = []
    for _ in range(B):
        row = [rng.py.choice(pool) for _ in range(rng.py.randint(*lengths))]
        if ngram > 1 and len(row) >= ngram:
            start = rng.py.randrange(len(row) - ngram + 1)
            row += row[start : start + ngram - 1]
        out.append(row)
    return out


def _min_p_safe(case: Case) -> bool:
    mp = case[2].get("min_p", 0.0)
    if not mp:
        return True
    t = case[2].get("temperature", 1.0)
    before = _wrong(None, (case[0], case[1], {**case[2], "min_p": 0.0}))
    p = torch.softmax(before, -1)
    ratio = p / p.max(-1, keepdim=True).values
    return bool(((ratio - mp).abs() > MARGIN * mp).all()) and t > 0


def draw(make: Callable[[], Case], telling: tuple[str, ...], tries: int = 400) -> Case:
    """Inputs from `make` on which the rule and every mistake in `telling` give different answers."""
    case = make()
    for _ in range(tries):
        if _min_p_safe(case):
            answers = [_wrong(None, case)] + [_wrong(m, case) for m in telling]
            if all(not same(a, b) for i, a in enumerate(answers) for b in answers[i + 1 :]):
                return case
        case = make()
    raise RuntimeError(f"no telling inputs for {telling}")  # a check's bug: never the submission's


# --- tests -----------------------------------------------------------------------------------------


def _test_unchanged(report: CheckReport, session: SubmissionLink, case: Case, full: dict[str, Any]) -> None:
    logits, tokens, _ = case
    handle, first = call_entry(session, "process_logits", logits, tokens, keep="both")
    first = as_tensor(first, "process_logits(logits, tokens)")
    if not same(first, logits.double()):
        raise Mismatch("process_logits(logits, tokens) with the defaults should return the logits unchanged")
    call_entry(session, "process_logits", handle, tokens, **full)
    after = as_tensor(session.get(handle), "the logits passed in")
    if not torch.equal(after, first):
        b, v = _first_difference(after, first)
        report.diagnose(mistakes.MUTATES_INPUT)  # named in the diagnosis too, so its hint is shown
        raise Mismatch(
            f"after process_logits(x, tokens, ...) the x passed in changed at row {b}, token {v}: "
            f"{float(first[b, v]):g} became {float(after[b, v]):g}. {mistakes.MUTATES_INPUT}"
        )


def _test_bad_arguments(report: CheckReport, session: SubmissionLink, case: Case) -> None:
    logits, tokens, _ = case
    bad: list[dict[str, Any]] = [
        {"repetition_penalty": 0.0},
        {"repetition_penalty": -1.5},
        {"temperature": 0.0},
        {"temperature": -0.7},
        {"min_p": -0.1},
        {"min_p": 1.5},
        {"no_repeat_ngram_size": -1},
    ]
    for kwargs in bad:
        what = _describe(kwargs, False)
        try:
            call_entry(session, "process_logits", logits, tokens, **kwargs)
        except SubmissionError as exc:
            if exc.type_name == "ValueError":
                continue
            if exc.type_name != "NotImplementedError":
                report.diagnose(mistakes.BAD_ARGUMENTS)
            raised = exception_text(exc.type_name, exc.message[:100], parens=True)
            raise Mismatch(f"{what} raised {raised}, expected ValueError") from None
        report.diagnose(mistakes.BAD_ARGUMENTS)
        raise Mismatch(f"{what} did not raise: {mistakes.BAD_ARGUMENTS}")


def short_rows(rng: Rng, B: int, V: int, n: int) -> list[list[int]]:
    """Rows of n - 1 tokens (no n-gram yet, though the prefix is there) and of 1 token, shuffled."""
    lengths = [n - 1, 1] + [rng.py.randint(1, n - 1) for _ in range(B - 2)]
    rng.py.shuffle(lengths)
    return [[rng.py.randrange(V) for _ in range(k)] for k in lengths]


def run(session: SubmissionLink, seed: int | None = None) -> CheckReport:
    """The battery; `seed` makes a run reproducible (tests), None draws fresh inputs (grading)."""
    report = CheckReport()
    rng = Rng(seed)
    py = rng.py
    evidence = Evidence()
    B, V = 3, py.randint(12, 20)

    def case(ngram: int = 0, **kwargs: Any) -> Callable[[], Case]:
        return lambda: (grid_logits(rng, B, V), rows(rng, B, V, ngram=ngram), kwargs)

    def check(
        name: str, telling: tuple[str, ...], make: Callable[[], Case], positional: bool = False
    ) -> None:
        inputs = draw(make, telling)
        run_test(report, name, partial(_expect, report, session, evidence, inputs, telling, positional))

    m = mistakes
    check(f"the defaults return the logits unchanged (B={B}, V={V})", (), case())
    rp, low = py.choice([1.3, 1.5, 2.0]), py.choice([0.5, 0.8])
    check(
        f"repetition_penalty={rp}: a seen id's positive logit divided, a negative one multiplied, "
        "once per id",
        (m.REP_SIGN_IGNORED, m.REP_SIGNS_SWAPPED, m.REP_PER_OCCURRENCE, m.REP_IGNORED),
        case(repetition_penalty=rp),
    )
    check(
        f"repetition_penalty={low} (below 1 it favours seen ids), the same two signs",
        (m.REP_SIGN_IGNORED, m.REP_SIGNS_SWAPPED),
        case(repetition_penalty=low),
    )
    pp, fp = py.choice([0.5, 1.25, -0.75]), py.choice([0.25, 0.5, -0.5])
    pp2, fp2 = py.choice([0.5, 1.0]), py.choice([0.25, -0.25])
    check(
        f"presence_penalty={pp2} with frequency_penalty={fp2}: presence once per id, frequency per use",
        (m.PENALTIES_SWAPPED, m.PRESENCE_TIMES_COUNT, m.FREQUENCY_ONCE),
        case(presence_penalty=pp2, frequency_penalty=fp2),
    )
    check(
        f"presence_penalty={pp} alone: subtracted once from every id that occurs",
        (m.PRESENCE_TIMES_COUNT,),
        case(presence_penalty=pp),
    )
    check(
        f"frequency_penalty={fp} alone: subtracted once per occurrence",
        (m.FREQUENCY_ONCE,),
        case(frequency_penalty=fp),
    )
    n = py.choice([2, 3])
    check(
        f"no_repeat_ngram_size={n}: a token completing an n-gram already in the row gets -inf",
        (m.NGRAM_PREFIX_N, m.NGRAM_IGNORED, m.MASK_NOT_INF),
        case(ngram=n, no_repeat_ngram_size=n),
    )
    check(
        "no_repeat_ngram_size=4 with rows of 1 to 3 tokens: no n-gram yet, nothing banned, nothing raised",
        (),
        lambda: (grid_logits(rng, B, V), short_rows(rng, B, V, 4), {"no_repeat_ngram_size": 4}),
    )
    check(
        "no_repeat_ngram_size=1 bans every token the row holds", (m.NGRAM_N1,), case(no_repeat_ngram_size=1)
    )
    t = py.choice([0.5, 0.7, 1.5, 2.0])
    check(f"temperature={t} divides the logits", (m.TEMPERATURE_MULTIPLIES,), case(temperature=t))
    mp = py.choice([0.05, 0.1, 0.2])
    check(
        f"min_p={mp}: tokens with p < min_p * max(p) get -inf",
        (m.MIN_P_ABSOLUTE, m.MASK_NOT_INF),
        case(min_p=mp),
    )
    t2, mp2 = py.choice([0.5, 2.0]), py.choice([0.1, 0.2, 0.3])
    check(
        f"min_p={mp2} with temperature={t2}: p is the softmax after temperature",
        (m.MIN_P_BEFORE_TEMPERATURE, m.TEMPERATURE_MULTIPLIES),
        case(temperature=t2, min_p=mp2),
    )
    full = {
        "repetition_penalty": py.choice([1.2, 1.5]),
        "presence_penalty": py.choice([0.5, 1.0]),
        "frequency_penalty": py.choice([0.25, 0.5]),
        "no_repeat_ngram_size": 2,
        "temperature": py.choice([0.5, 0.8, 1.6]),
        "min_p": py.choice([0.02, 0.05]),
    }
    check(
        "every processor at once, passed by position, in the stated order",
        (m.PENALTIES_BEFORE_REP, m.TEMPERATURE_FIRST),
        case(ngram=2, **full),
        positional=True,
    )
    unchanged = partial(_test_unchanged, report, session, case()(), full)
    run_test(report, "the logits passed in are left unchanged", unchanged)
    run_test(
        report,
        "ValueError for repetition_penalty <= 0, temperature <= 0, min_p outside [0, 1], "
        "a negative no_repeat_ngram_size",
        partial(_test_bad_arguments, report, session, case()()),
    )
    return report

"""sampling: temperature -> top-k -> top-p filtering, and inverse-CDF sampling in vocabulary order.

Logits are fresh per run and lie on a grid of 1/32 (distinct values a float32 softmax never
merges), with ties planted where a test is about ties: a tied maximum for greedy decoding,
a tie at the k-th value for top-k. top_p is picked from round values (0.6, 0.75, ...) that
sit well between two cumulative sums, so the token that crosses the threshold is decided
by the rule and never by rounding; the draws u keep the same distance from every step of
the CDF. Every optional argument is exercised with a non-default value, by keyword and by
position, and the defaults once on a vocabulary larger than 50 (a default top_k of 50
would show).

A wrong answer is compared with the usual wrong samplers (temperature multiplied or applied
last, top-p before top-k, the crossing token dropped, every tie at the k-th value kept, the
CDF taken in sorted order, ...) so the verdict names the mistake.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import torch

from graders.checks import sampling_variants
from graders.checks.report import CheckReport, Mismatch, as_tensor, close, explain_difference, run_test
from graders.checks.sampling_variants import (
    BAD_ARGUMENTS,
    CDF_GE,
    GREEDY_NAN,
    SAMPLE_IGNORES_FILTERS,
    SORTED_CDF,
    TOP_K_TOO_LARGE,
    filter_variants,
    grid_logits,
    plant_tie,
    safe_top_p,
    safe_u,
    telling_case,
)
from graders.checks.serving_common import Rng, call_entry
from graders.reference.sampling import descending_order, filter_probs, inverse_cdf
from graders.sandbox.protocol import SubmissionError, SubmissionLink
from graders.wording import exception_text

SLUG = "sampling"
ENTRY_POINT = "filter_probs"
KNOWN_MISTAKES = sampling_variants.KNOWN_MISTAKES  # the sentences live beside the wrong samplers

# --- tests -----------------------------------------------------------------------------------------


def _describe(args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    parts = [repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()]
    return "filter_probs(logits" + "".join(", " + p for p in parts) + ")"


def _probs(value: Any, want: torch.Tensor, what: str) -> torch.Tensor:
    got = as_tensor(value, what)
    if got.shape != want.shape:
        raise Mismatch(f"{what} returned shape {tuple(got.shape)}, expected {tuple(want.shape)} (B, V)")
    if not got.is_floating_point():
        raise Mismatch(f"{what} returned dtype {got.dtype}: probabilities are floats")
    return got


def _test_filter(
    report: CheckReport,
    session: SubmissionLink,
    logits: torch.Tensor,
    args: tuple[Any, ...] = (),
    kwargs: dict[str, Any] | None = None,
) -> None:
    kwargs = kwargs or {}
    named = dict(zip(("temperature", "top_k", "top_p"), args, strict=False)) | kwargs
    t, k, p = named.get("temperature", 1.0), named.get("top_k", 0), named.get("top_p", 1.0)
    what = _describe(args, kwargs)
    want = filter_probs(logits.double(), t, k, p)
    try:
        value = call_entry(session, "filter_probs", logits, *args, **kwargs)
    except SubmissionError as exc:
        if k >= logits.shape[-1] and exc.type_name in ("RuntimeError", "IndexError"):
            report.diagnose(TOP_K_TOO_LARGE)
            raised = exception_text(exc.type_name, exc.message[:100], parens=True)
            raise Mismatch(f"{what} raised {raised}: {TOP_K_TOO_LARGE}") from None
        raise
    got = _probs(value, want, what)
    if t == 0 and not torch.isfinite(got).all():
        report.diagnose(GREEDY_NAN)
        raise Mismatch(f"{what} contains NaN or inf: {GREEDY_NAN}")
    if close(got, want):
        return
    message = f"{what}: " + explain_difference(got, want.to(got.dtype), "the probabilities")
    kept, want_kept = int((got > 0).sum()), int((want > 0).sum())
    if kept != want_kept:
        message += f"; it keeps {kept} tokens over the {logits.shape[0]} rows, the rule keeps {want_kept}"
    variants = filter_variants(logits.double(), t, k, p)
    already = [name for name in variants if name in report.diagnosis]  # consistent with earlier tests
    for name in already + [name for name in variants if name not in already]:
        wrong = variants[name]
        if not close(wrong, want) and close(got, wrong):
            report.diagnose(name)
            message += f". It looks like {name}"
            break
    raise Mismatch(message)


def sample_variants(
    logits: torch.Tensor, u: torch.Tensor, t: float, k: int, p: float
) -> dict[str, torch.Tensor]:
    probs = filter_probs(logits, t, k, p)
    order = descending_order(probs)
    sorted_pick = order.gather(-1, inverse_cdf(probs.gather(-1, order), u)[:, None])[:, 0]
    ge = (probs.cumsum(-1) >= u[:, None]).to(torch.int8).argmax(-1)
    return {
        SORTED_CDF: sorted_pick,
        CDF_GE: ge,
        SAMPLE_IGNORES_FILTERS: inverse_cdf(torch.softmax(logits, -1), u),
    }


def _test_sample(
    report: CheckReport,
    session: SubmissionLink,
    logits: torch.Tensor,
    u: torch.Tensor,
    kwargs: dict[str, Any],
) -> None:
    t, k, p = kwargs.get("temperature", 1.0), kwargs.get("top_k", 0), kwargs.get("top_p", 1.0)
    what = "sample(logits, u" + "".join(f", {a}={b!r}" for a, b in kwargs.items()) + ")"
    want = inverse_cdf(filter_probs(logits.double(), t, k, p), u.double())
    got = as_tensor(call_entry(session, "sample", logits, u, **kwargs), what)
    if got.dtype != torch.int64 or got.shape != want.shape:
        raise Mismatch(f"{what} returned {got.dtype} of shape {tuple(got.shape)}, expected a LongTensor (B,)")
    if torch.equal(got, want):
        return
    b = int((got != want).nonzero()[0])
    message = (
        f"{what}: row {b} with u={float(u[b]):.4f} drew token {int(got[b])}, expected {int(want[b])} "
        f"(the smallest t with cumsum(probs)[t] > u)"
    )
    for name, wrong in sample_variants(logits.double(), u.double(), t, k, p).items():
        if not torch.equal(wrong, want) and torch.equal(got, wrong):
            report.diagnose(name)
            message += f". It looks like {name}"
            break
    raise Mismatch(message)


def _test_bad_arguments(
    report: CheckReport, session: SubmissionLink, logits: torch.Tensor, entry: str
) -> None:
    bad: list[dict[str, Any]] = [{"temperature": -0.5}, {"top_k": -1}, {"top_p": 0.0}, {"top_p": 1.25}]
    u = torch.full((logits.shape[0],), 0.5)
    for kwargs in bad:
        args = (logits, u) if entry == "sample" else (logits,)
        named = ", ".join(f"{k}={v}" for k, v in kwargs.items())
        what = f"{entry}(logits{', u' if entry == 'sample' else ''}, {named})"
        try:
            call_entry(session, entry, *args, **kwargs)
        except SubmissionError as exc:
            if exc.type_name == "ValueError":
                continue
            report.diagnose(BAD_ARGUMENTS)
            raised = exception_text(exc.type_name, exc.message[:100], parens=True)
            raise Mismatch(f"{what} raised {raised}, expected ValueError") from None
        report.diagnose(BAD_ARGUMENTS)
        raise Mismatch(f"{what} did not raise: {BAD_ARGUMENTS}")


def run(session: SubmissionLink, seed: int | None = None) -> CheckReport:
    """The battery; `seed` makes a run reproducible (tests), None draws fresh inputs (grading)."""
    report = CheckReport()
    rng = Rng(seed)
    py = rng.py
    check = partial(run_test, report)

    # One B and one V for every call (V > 50, so that a default top_k of 50 would show): no call
    # can be told from another by its shape.
    B, V = py.choice([2, 3]), py.randint(51, 72)
    big = grid_logits(rng, B, V)
    check(
        f"filter_probs(logits) with the defaults is the softmax (B={B}, V={V})",
        partial(_test_filter, report, session, big),
    )

    t = py.choice([0.5, 0.7, 1.5, 2.0])
    logits = grid_logits(rng, B, V)
    check(
        f"temperature={t} alone reshapes the softmax",
        partial(_test_filter, report, session, logits, (), {"temperature": t}),
    )

    greedy = grid_logits(rng, B, V)
    low, high = plant_tie(greedy, 0, 0, rng)  # row 0: a tied maximum
    check(
        "temperature=0 is greedy: all mass on the highest logit, the lowest index of a tie "
        f"(indices {low} and {high})",
        partial(_test_filter, report, session, greedy, (0.0,), {"top_k": 3, "top_p": 0.9}),
    )

    k = py.randint(3, 6)
    tied = grid_logits(rng, B, V)
    low, high = plant_tie(tied, B - 1, k - 1, rng)  # last row: a tie at the k-th value
    check(
        f"top_k={k} keeps exactly {k}, a tie at the {k}-th value going to the lower index "
        f"({low}, not {high})",
        partial(_test_filter, report, session, tied, (), {"top_k": k}),
    )

    def top_k_at_least_v() -> None:
        _test_filter(report, session, logits, (), {"top_k": V})
        _test_filter(report, session, logits, (1.0, V + 7))

    check(f"top_k >= V keeps every token (top_k={V} and {V + 7})", top_k_at_least_v)

    nucleus = grid_logits(rng, B, V, spread=1.5)
    p = safe_top_p(nucleus, 1.0, 0, rng)
    check(
        f"top_p={p} keeps the smallest set reaching {p}, the token that crosses it included",
        partial(_test_filter, report, session, nucleus, (), {"top_p": p}),
    )

    combined, t2, k2, p2 = telling_case(rng, B, V)
    check(
        f"filter_probs(logits, {t2}, {k2}, {p2}): temperature, then top-k, then top-p over the "
        "renormalised top-k",
        partial(_test_filter, report, session, combined, (t2, k2, p2)),
    )

    kwargs = {"temperature": t2, "top_k": k2, "top_p": p2}
    probs = filter_probs(combined.double(), t2, k2, p2)
    zero_row = py.randrange(B)
    if probs[zero_row, 0] > 0:  # make token 0 of that row one top-k drops
        combined[zero_row, 0] = combined[zero_row].min() - 1
        probs = filter_probs(combined.double(), t2, k2, p2)
    u = safe_u(probs, rng, zero_row=zero_row, unlike=torch.softmax(combined.double(), -1))
    check(
        f"sample(logits, u, temperature={t2}, top_k={k2}, top_p={p2}) is the inverse CDF in vocabulary order "
        f"(u={u[zero_row].item():g} on row {zero_row}, whose token 0 was filtered out)",
        partial(_test_sample, report, session, combined, u, kwargs),
    )
    u_default = safe_u(torch.softmax(big.double(), -1), rng)
    check("sample(logits, u) with the defaults", partial(_test_sample, report, session, big, u_default, {}))
    check(
        "filter_probs raises ValueError for temperature < 0, top_k < 0, top_p = 0 and top_p > 1",
        partial(_test_bad_arguments, report, session, logits, "filter_probs"),
    )
    check(
        "sample raises ValueError for the same bad arguments",
        partial(_test_bad_arguments, report, session, logits, "sample"),
    )
    return report

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

from collections.abc import Callable
from functools import partial
from typing import Any

import torch

from graders.checks.report import CheckReport, Mismatch, as_tensor, close, explain_difference, run_test
from graders.checks.serving_common import Rng, call_entry
from graders.reference.sampling import descending_order, filter_probs, inverse_cdf
from graders.sandbox.session import Session, SubmissionError

SLUG = "sampling"
ENTRY_POINT = "filter_probs"

TEMPERATURE_MULTIPLIES = "the logits are multiplied by the temperature instead of divided"
TEMPERATURE_LAST = "temperature is applied after top-k / top-p chose the tokens: it comes first"
TEMPERATURE_IGNORED = "the temperature argument is ignored"
GREEDY_NAN = "temperature 0 divides by zero: it means greedy, all mass on the highest logit"
GREEDY_SPLITS_TIES = "temperature 0 splits the mass between tied logits: the lowest index takes it all"
GREEDY_LAST_INDEX = "temperature 0 gives a tie to the higher index, not the lowest"
TOP_K_KEEPS_TIES = (
    "top-k keeps every token tied with the k-th value: exactly k are kept, ties to the lower index"
)
TOP_K_HIGHER_INDEX = "top-k breaks a tie at the k-th value toward the higher index, not the lower"
TOP_K_IGNORED = "the top_k argument is ignored"
TOP_K_TOO_LARGE = "top_k >= V must keep every token (torch.topk raises for k > V)"
TOP_P_BEFORE_TOP_K = "top-p is computed before top-k, or over probabilities top-k did not renormalise"
TOP_P_DROPS_CROSSING = (
    "top-p drops the token that crosses the threshold: keep it (the kept mass reaches top_p)"
)
TOP_P_IGNORED = "the top_p argument is ignored"
NOT_RENORMALISED = "the kept probabilities are not renormalised to sum to 1"
SORTED_CDF = "sample walks the CDF in sorted order: the cumulative sum runs in vocabulary order"
CDF_GE = (
    "sample takes cumsum >= u: the rule is the smallest t with cumsum > u (zero-mass tokens are never drawn)"
)
SAMPLE_IGNORES_FILTERS = "sample ignores its temperature / top_k / top_p arguments"
BAD_ARGUMENTS = "bad arguments must raise ValueError: temperature < 0, top_k < 0, top_p outside (0, 1]"
KNOWN_MISTAKES = (
    TEMPERATURE_MULTIPLIES, TEMPERATURE_LAST, TEMPERATURE_IGNORED, GREEDY_NAN, GREEDY_SPLITS_TIES,
    GREEDY_LAST_INDEX, TOP_K_KEEPS_TIES, TOP_K_HIGHER_INDEX, TOP_K_IGNORED, TOP_K_TOO_LARGE,
    TOP_P_BEFORE_TOP_K, TOP_P_DROPS_CROSSING, TOP_P_IGNORED, NOT_RENORMALISED, SORTED_CDF, CDF_GE,
    SAMPLE_IGNORES_FILTERS, BAD_ARGUMENTS,
)  # fmt: skip

TOP_P_CHOICES = (0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9)
MARGIN = 2e-3  # distance kept between top_p (or u) and any cumulative sum


# --- wrong samplers --------------------------------------------------------------------------------


def _mask_top_k(probs: torch.Tensor, k: int, ties: str = "lower") -> torch.Tensor:
    if not 0 < k < probs.shape[-1]:
        return probs
    if ties == "all":
        kth = probs.topk(k, dim=-1).values[:, -1:]
        return torch.where(probs >= kth, probs, torch.zeros_like(probs))
    order = descending_order(probs.flip(-1)) if ties == "higher" else descending_order(probs)
    if ties == "higher":
        order = probs.shape[-1] - 1 - order
    keep = torch.zeros_like(probs, dtype=torch.bool).scatter_(-1, order[:, :k], True)
    return torch.where(keep, probs, torch.zeros_like(probs))


def _mask_top_p(probs: torch.Tensor, p: float, crossing: bool = True) -> torch.Tensor:
    if p >= 1.0:
        return probs
    probs = probs / probs.sum(-1, keepdim=True)
    order = descending_order(probs)
    sorted_probs = probs.gather(-1, order)
    cum = sorted_probs.cumsum(-1)
    keep_sorted = (cum - sorted_probs < p) if crossing else (cum <= p)
    keep_sorted[:, 0] = True
    keep = torch.zeros_like(keep_sorted).scatter_(-1, order, keep_sorted)
    return torch.where(keep, probs, torch.zeros_like(probs))


def variant(
    logits: torch.Tensor,
    temperature: float,
    top_k: int,
    top_p: float,
    *,
    temp: str = "divide",
    ties: str = "lower",
    crossing: bool = True,
    p_first: bool = False,
    renormalise: bool = True,
) -> torch.Tensor:
    """filter_probs with one step done wrong (temperature > 0)."""
    if temp == "multiply":
        probs = torch.softmax(logits * temperature, -1)
    elif temp in ("last", "ignored"):
        probs = torch.softmax(logits, -1)
    else:
        probs = torch.softmax(logits / temperature, -1)
    if p_first:
        probs = _mask_top_k(_mask_top_p(probs, top_p, crossing), top_k, ties)
    else:
        probs = _mask_top_p(_mask_top_k(probs, top_k, ties), top_p, crossing)
    if temp == "last":
        probs = torch.where(probs > 0, torch.softmax(logits / temperature, -1), torch.zeros_like(probs))
    return probs / probs.sum(-1, keepdim=True) if renormalise else probs


def filter_variants(logits: torch.Tensor, t: float, k: int, p: float) -> dict[str, torch.Tensor]:
    if t == 0:
        V = logits.shape[-1]
        top = logits == logits.amax(-1, keepdim=True)
        last = V - 1 - top.flip(-1).to(torch.int8).argmax(-1)
        return {
            GREEDY_SPLITS_TIES: top.double() / top.sum(-1, keepdim=True),
            GREEDY_LAST_INDEX: torch.nn.functional.one_hot(last, V).double(),
        }
    return {
        TEMPERATURE_MULTIPLIES: variant(logits, t, k, p, temp="multiply"),
        TEMPERATURE_LAST: variant(logits, t, k, p, temp="last"),
        TEMPERATURE_IGNORED: variant(logits, t, k, p, temp="ignored"),
        TOP_K_KEEPS_TIES: variant(logits, t, k, p, ties="all"),
        TOP_K_HIGHER_INDEX: variant(logits, t, k, p, ties="higher"),
        # Top-p first always coincides with ignoring top-k or top-p in a single call; the tests
        # of each argument alone tell them apart, so an earlier diagnosis wins (see _test_filter).
        TOP_P_BEFORE_TOP_K: variant(logits, t, k, p, p_first=True),
        TOP_K_IGNORED: variant(logits, t, 0, p),
        TOP_P_DROPS_CROSSING: variant(logits, t, k, p, crossing=False),
        TOP_P_IGNORED: variant(logits, t, k, 1.0),
        NOT_RENORMALISED: variant(logits, t, k, p, renormalise=False),
    }


# --- inputs ----------------------------------------------------------------------------------------


def grid_logits(rng: Rng, B: int, V: int, spread: float = 3.0) -> torch.Tensor:
    """(B, V) float32 logits: distinct multiples of 1/32 in about [-spread, spread], in random order."""
    rows = []
    half = max(int(32 * spread), V)
    for _ in range(B):
        values = rng.py.sample(range(-half, half), V)
        rows.append([v / 32 for v in values])
    return torch.tensor(rows, dtype=torch.float32)


def plant_tie(logits: torch.Tensor, row: int, rank: int, rng: Rng) -> tuple[int, int]:
    """Copy the value of the row's rank-th largest logit onto another index; return (lower, higher)."""
    order = descending_order(logits[row : row + 1])[0].tolist()
    src, dst = order[rank], order[rng.py.randrange(rank + 1, len(order))]
    logits[row, dst] = logits[row, src]
    return min(src, dst), max(src, dst)


def safe_top_p(logits: torch.Tensor, t: float, k: int, rng: Rng) -> float:
    """A round top_p at least MARGIN away from every cumulative sum of every row (after top-k)."""
    probs = _mask_top_k(torch.softmax(logits.double() / t, -1), k)
    probs = probs / probs.sum(-1, keepdim=True)
    cum = probs.gather(-1, descending_order(probs)).cumsum(-1)
    choices = [p for p in TOP_P_CHOICES if bool(((cum - p).abs() > MARGIN).all())]
    return rng.py.choice(choices or [0.5])


def safe_u(
    probs: torch.Tensor, rng: Rng, zero_row: int | None = None, unlike: torch.Tensor | None = None
) -> torch.Tensor:
    """(B,) draws at least MARGIN away from every step of each row's CDF (vocabulary order).

    With `unlike` (other probabilities), the rows other than zero_row prefer draws where the two
    distributions give different tokens, so a sampler that skips the filters shows."""
    cum = probs.double().cumsum(-1)
    other = unlike.double().cumsum(-1) if unlike is not None else None
    u = []
    for b in range(probs.shape[0]):
        if b == zero_row:
            u.append(0.0)
            continue
        candidates = []
        for _ in range(200):
            x = rng.py.random() * (1 - 2 * MARGIN)
            if bool(((cum[b] - x).abs() > MARGIN).all()):
                candidates.append(x)
                if other is None or int((cum[b] > x).nonzero()[0]) != int((other[b] > x).nonzero()[0]):
                    break
        u.append(candidates[-1])
    return torch.tensor(u, dtype=torch.float32)


COINCIDE = {TOP_K_IGNORED, TOP_P_IGNORED}  # top-p first always equals one of these in a single call
# The mistakes the combined call must tell apart (the tie rules have tests of their own).
TELLING = {
    TEMPERATURE_MULTIPLIES,
    TEMPERATURE_LAST,
    TEMPERATURE_IGNORED,
    TOP_P_BEFORE_TOP_K,
    TOP_K_IGNORED,
    TOP_P_IGNORED,
    TOP_P_DROPS_CROSSING,
    NOT_RENORMALISED,
}


def telling_case(rng: Rng, B: int, V: int) -> tuple[torch.Tensor, float, int, float]:
    """Logits and (temperature, top_k, top_p) for which every wrong sampler gives another answer,
    and no two of them give the same one (so the verdict can name the mistake)."""
    for _ in range(100):
        t, k = rng.py.choice([0.6, 0.8, 1.3, 1.6]), rng.py.randint(4, 8)
        logits = grid_logits(rng, B, V, spread=rng.py.choice([1.0, 1.5, 2.0]))
        p = safe_top_p(logits, t, k, rng)
        want = filter_probs(logits.double(), t, k, p)
        variants = {n: w for n, w in filter_variants(logits.double(), t, k, p).items() if n in TELLING}
        if any(close(w, want) for w in variants.values()):
            continue
        names = list(variants)
        clash = any(
            close(variants[a], variants[b])
            for i, a in enumerate(names)
            for b in names[i + 1 :]
            if not (TOP_P_BEFORE_TOP_K in (a, b) and {a, b} & COINCIDE)
        )
        if not clash:
            return logits, t, k, p
    return logits, t, k, p


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
    session: Session,
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
            raise Mismatch(
                f"{what} raised {exc.type_name} ({exc.message[:100]}): {TOP_K_TOO_LARGE}"
            ) from None
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
    report: CheckReport, session: Session, logits: torch.Tensor, u: torch.Tensor, kwargs: dict[str, Any]
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


def _test_bad_arguments(report: CheckReport, session: Session, logits: torch.Tensor, entry: str) -> None:
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
            raise Mismatch(
                f"{what} raised {exc.type_name} ({exc.message[:100]}), expected ValueError"
            ) from None
        report.diagnose(BAD_ARGUMENTS)
        raise Mismatch(f"{what} did not raise: {BAD_ARGUMENTS}")


def run(session: Session, seed: int | None = None) -> CheckReport:
    """The battery; `seed` makes a run reproducible (tests), None draws fresh inputs (grading)."""
    report = CheckReport()
    rng = Rng(seed)
    py = rng.py

    def check(name: str, body: Callable[[], None]) -> None:
        run_test(report, name, body)

    # One B and one V for every call (V > 50, so that a default top_k of 50 would show): no call
    # can be told from another by its shape.
    B, V = py.choice([2, 3]), py.randint(51, 72)
    big = grid_logits(rng, B, V)
    check(f"filter_probs(logits) with the defaults is the softmax (B={B}, V={V})",
          partial(_test_filter, report, session, big))  # fmt: skip

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
    check(f"top_p={p} keeps the smallest set reaching {p}, the token that crosses it included",
          partial(_test_filter, report, session, nucleus, (), {"top_p": p}))  # fmt: skip

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
    check("filter_probs raises ValueError for temperature < 0, top_k < 0, top_p = 0 and top_p > 1",
          partial(_test_bad_arguments, report, session, logits, "filter_probs"))  # fmt: skip
    check("sample raises ValueError for the same bad arguments",
          partial(_test_bad_arguments, report, session, logits, "sample"))  # fmt: skip
    return report

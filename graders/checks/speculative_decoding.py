"""speculative-decoding: the accept/reject step of speculative sampling, exactly.

Every call is an ordinary accept_draft(draft_tokens, q_probs, p_probs, u_accept, u_sample)
and its answer is compared, token for token, with graders.reference.speculative:

- crafted cases whose distributions are multiples of 1/32 (exact in float32), so that
  p / q and u * q are exact: a draw exactly on the acceptance boundary (u == p / q must be
  rejected), a rejection followed by drafts that would pass (the step stops there), every
  draft accepted (the bonus comes from p[γ], not p[γ - 1]), and u_sample = 0 where the
  residual's first token has no mass; u_sample is picked so that the residual, p[j] itself,
  an unnormalised residual and a residual without max(0, .) all give different tokens;
- random float32 cases, with every u kept away from the boundaries rounding could move;
- the property behind the algorithm: with γ = 1 and V = 4, over every draft token (weighted
  by q[0]) and a 4 x 4 grid of (u_accept, u_sample), the first emitted token must be
  distributed exactly as p[0] (the distributions are chosen so that the grid is exact), and
  the share of accepted drafts is the acceptance rate the verdict reports.
A wrong answer is compared with the usual wrong steps (speculative_decoding_mistakes.py) so that
the verdict names the mistake.
"""

from __future__ import annotations

from fractions import Fraction
from functools import partial
from typing import Any

import torch

from graders.checks.report import CheckReport, Mismatch, run_test
from graders.checks.serving_common import Rng, as_int_list, call_entry, figure_test
from graders.checks.speculative_decoding_mistakes import (
    BONUS_FROM_LAST_DRAFT,
    DOES_NOT_STOP,
    KNOWN_MISTAKES,
    NOT_EXACT,
    RESIDUAL_IS_P,
    RESIDUAL_NOT_CLAMPED,
    RESIDUAL_Q_MINUS_P,
    RESIDUAL_UNNORMALISED,
    Evidence,
    draw,
    wrong_step,
)
from graders.reference.speculative import accept_draft, acceptance_rate
from graders.sandbox.protocol import SubmissionLink

SLUG = "speculative-decoding"
ENTRY_POINT = "accept_draft"
__all__ = [
    "ENTRY_POINT",
    "KNOWN_MISTAKES",
    "RESIDUAL_IS_P",
    "RESIDUAL_NOT_CLAMPED",
    "RESIDUAL_Q_MINUS_P",
    "RESIDUAL_UNNORMALISED",
    "SLUG",
    "run",
    "wrong_step",
]


D = 32  # crafted distributions are multiples of 1/D
MARGIN = 1e-4


# --- one call, compared ----------------------------------------------------------------------------


def _expect(
    report: CheckReport, session: SubmissionLink, evidence: Evidence, case: tuple[Any, ...], what: str
) -> list[int]:
    draft, q, p, ua, us = case
    got = as_int_list(call_entry(session, "accept_draft", draft, q, p, ua, us), "accept_draft(...)")
    want = accept_draft(draft, q, p, ua, us)
    if what != "on the grid":  # the grid's 64 answers are summed up by the property instead
        evidence.seen.append((case, got))
    if got != want:
        ratios = [round(float(p[i, t] / q[i, t]), 4) for i, t in enumerate(draft.tolist())]
        raise Mismatch(
            f"{what}: drafts {draft.tolist()}, p/q at the drafts {ratios}, u_accept "
            f"{[round(float(x), 4) for x in ua]}, u_sample {us:.4g}: got {got}, expected {want}"
            + evidence.name(report, case, want)
        )
    return got


# --- crafted cases ---------------------------------------------------------------------------------


def _dyadic(rng: Rng, V: int) -> list[int]:
    """V positive counts summing to D."""
    cuts = sorted(rng.py.sample(range(1, D), V - 1))
    return [b - a for a, b in zip([0, *cuts], [*cuts, D], strict=True)]


def _draw_fast(w: list[float], u: float, normalise: bool = True) -> int:
    """draw in plain Python (for searching many u quickly); the same rule and fallback."""
    bound, total = (u * sum(w) if normalise else u), 0.0
    for t, x in enumerate(w):
        total += x
        if total > bound:
            return t
    return max(t for t, x in enumerate(w) if x > 0)


def _distinct_u(candidates: list[tuple[list[float], bool]], rng: Rng) -> tuple[float, int]:
    """A u_sample in (0, 1), off the 1/32 grid, for which the candidate draws (weights, normalised?)
    give as many different tokens as possible, and how many that is."""
    us = [i / 64 + 1 / 256 for i in range(1, 64)]
    rng.py.shuffle(us)
    best, best_count = us[0], 0
    for u in us:
        count = len({_draw_fast(w, u, norm) for w, norm in candidates})
        if count > best_count:
            best, best_count = u, count
            if count == len(candidates):
                break
    return best, best_count


def crafted_rejection(rng: Rng) -> tuple[Any, ...]:
    """γ = 4, V = 6: draft 1 lands exactly on its acceptance boundary and is rejected; 2 and 3 would pass."""
    V, gamma = 6, 4
    while True:
        q = torch.tensor([_dyadic(rng, V) for _ in range(gamma)], dtype=torch.float32) / D
        p = torch.tensor([_dyadic(rng, V) for _ in range(gamma + 1)], dtype=torch.float32) / D
        # The boundary token: q count a power of two, p count below it, so p / q is exact.
        for token in range(V):
            qc, pc = int(q[1, token] * D), int(p[1, token] * D)
            if qc in (4, 8, 16) and 0 < pc < qc:
                break
        else:
            continue
        others = [int((p[i] / q[i]).argmax()) for i in (0, 2, 3)]  # tokens every u accepts
        draft = torch.tensor([others[0], token, others[1], others[2]])
        ua = torch.tensor([rng.py.random() * 0.9, float(p[1, token] / q[1, token]), 0.0, 0.0])
        residual = (p[1] - q[1]).clamp(min=0)
        inverted = (q[1] - p[1]).clamp(min=0)
        draws = [
            (residual.tolist(), True),
            (p[1].tolist(), True),
            (inverted.tolist(), True),
            (residual.tolist(), False),
            ((p[1] - q[1]).tolist(), True),
        ]
        if int((residual > 0).sum()) < 2:
            continue
        # Every wrong residual must give its own token here: the random cases are drawn to tell
        # other mistakes apart, so if two of these agreed (the unclamped residual sums to 0 and
        # always draws its first positive prefix, which the unnormalised draw can match) the
        # verdict could name the wrong one of the two.
        us, count = _distinct_u(draws, rng)
        if count == len(draws):
            return draft, q, p, ua, us


def crafted_all_accepted(rng: Rng) -> tuple[Any, ...]:
    """γ = 3: every draft accepted; p[γ] and p[γ - 1] give different bonus tokens for this u_sample."""
    V, gamma = 5, 3
    q = torch.tensor([_dyadic(rng, V) for _ in range(gamma)], dtype=torch.float32) / D
    p = torch.tensor([_dyadic(rng, V) for _ in range(gamma + 1)], dtype=torch.float32) / D
    draft = torch.tensor([int((p[i] / q[i]).argmax()) for i in range(gamma)])
    ratios = torch.stack([p[i, draft[i]] / q[i, draft[i]] for i in range(gamma)]).clamp(max=1)
    ua = ratios * torch.tensor([rng.py.uniform(0.05, 0.9) for _ in range(gamma)])
    us, _ = _distinct_u([(p[gamma].tolist(), True), (p[gamma - 1].tolist(), True)], rng)
    return draft, q, p, ua, us


def crafted_zero_draw(rng: Rng) -> tuple[Any, ...]:
    """γ = 2: the first draft is rejected and u_sample = 0 where the residual's token 0 has no mass."""
    V = 5
    while True:
        q0, p0 = _dyadic(rng, V), _dyadic(rng, V - 1)
        p0 = [0, *p0]  # token 0: no mass in p, so none in the residual either
        if q0[1] > p0[1]:
            break
    q = torch.tensor([q0, _dyadic(rng, V)], dtype=torch.float32) / D
    p = torch.tensor([p0, _dyadic(rng, V), _dyadic(rng, V)], dtype=torch.float32) / D
    draft = torch.tensor([1, rng.py.randrange(V)])
    ua = torch.tensor([0.999, rng.py.random()])  # p/q < 1 at token 1: rejected
    return draft, q, p, ua, 0.0


def random_case(rng: Rng, telling: str) -> tuple[Any, ...]:
    """Random distributions on the same 1/32 grid as the crafted cases (so nothing tells them apart),
    u kept away from every boundary rounding could move, drawn until `telling` gives another answer."""
    for _ in range(50):
        case = _random_case(rng)
        draft, q, p, ua, us = case
        if wrong_step(draft, q, p, ua, us, telling) != accept_draft(draft, q, p, ua, us):
            break
    return case


def _random_case(rng: Rng) -> tuple[Any, ...]:
    gamma, V = rng.py.randint(1, 5), rng.py.randint(8, 20)
    q = torch.tensor([_dyadic(rng, V) for _ in range(gamma)], dtype=torch.float32) / D
    p = torch.tensor([_dyadic(rng, V) for _ in range(gamma + 1)], dtype=torch.float32) / D
    draft = torch.multinomial(q, 1, generator=rng.torch)[:, 0]
    ratio = (p[torch.arange(gamma), draft] / q[torch.arange(gamma), draft]).clamp(max=1).double()
    ua = []
    for r in ratio.tolist():
        while True:
            u = rng.py.random()
            if abs(u - r) > MARGIN:
                ua.append(u)
                break
    ua_t = torch.tensor(ua, dtype=torch.float32)
    n = int((ua_t.double() < ratio).to(torch.int64).cumprod(0).sum())
    w = p[n].double() if n == gamma else (p[n].double() - q[n].double()).clamp(min=0)
    cdf = w.cumsum(0) / w.sum()
    while True:
        us = rng.py.random()
        if bool(((cdf - us).abs() > MARGIN).all()):
            return draft, q, p, ua_t, us


# --- the property ----------------------------------------------------------------------------------


def grid_distributions(rng: Rng) -> tuple[list[int], list[int]]:
    """q0, p0 over V = 4 as counts of 16: acceptance ratios and the normalised residual in quarters."""
    while True:
        cuts = sorted(rng.py.sample(range(1, 16), 3))
        q = [b - a for a, b in zip([0, *cuts], [*cuts, 16], strict=True)]
        cuts = sorted(rng.py.randrange(0, 17) for _ in range(3))
        p = [b - a for a, b in zip([0, *cuts], [*cuts, 16], strict=True)]
        if not all((4 * pc) % qc == 0 for pc, qc in zip(p, q, strict=True) if pc < qc):
            continue
        w = [max(0, a - b) for a, b in zip(p, q, strict=True)]
        if sum(w) and all((4 * x) % sum(w) == 0 for x in w) and sum(1 for x in w if x) >= 2:
            # ... and on this grid, drawing from p itself must not happen to give the residual's tokens
            grid = [(i + 0.5) / 4 for i in range(4)]
            from_w = [draw(torch.tensor(w, dtype=torch.float64), u) for u in grid]
            from_p = [draw(torch.tensor(p, dtype=torch.float64), u) for u in grid]
            if from_w != from_p:
                return q, p


def _test_property(report: CheckReport, session: SubmissionLink, evidence: Evidence, rng: Rng) -> str:
    qc, pc = grid_distributions(rng)
    q = torch.tensor([qc], dtype=torch.float32) / 16
    p = torch.tensor([pc, _dyadic(rng, 4)], dtype=torch.float32) / torch.tensor([[16.0], [D]])
    grid = [(i + 0.5) / 4 for i in range(4)]
    first = [Fraction(0)] * 4
    accepted = Fraction(0)
    answers: list[tuple[tuple[Any, ...], list[int]]] = []
    for x0 in range(4):
        weight = Fraction(qc[x0], 16) / 16  # P(x0) times one cell of the 4 x 4 grid
        for ua in grid:
            for us in grid:
                case = (torch.tensor([x0]), q, p, torch.tensor([ua]), us)
                value = call_entry(session, "accept_draft", *case)
                got = as_int_list(value, "accept_draft(...)")
                answers.append((case, got))
                if not 1 <= len(got) <= 2 or not 0 <= got[0] < 4:
                    raise Mismatch(f"with γ = 1 accept_draft returned {got}: 1 or 2 tokens of the vocabulary")
                first[got[0]] += weight
                accepted += weight if len(got) == 2 else 0
    want = [Fraction(c, 16) for c in pc]
    wrong = [(case, got) for case, got in answers if got != accept_draft(*case)]
    named = evidence.name(report, wrong[0][0], accept_draft(*wrong[0][0])) if wrong else ""
    if first != want:
        report.diagnose(NOT_EXACT)
        raise Mismatch(
            f"over the grid the first token came out as {[str(f) for f in first]}, p[0] is "
            f"{[str(f) for f in want]}: {NOT_EXACT}{named}"
        )
    if wrong:
        (draft, _, _, ua, us), got = wrong[0]
        raise Mismatch(
            f"on the grid: draft {draft.tolist()}, u_accept {float(ua[0])}, u_sample {us}: got {got}, "
            f"expected {accept_draft(*wrong[0][0])}{named}"
        )
    expected = float(acceptance_rate(q, p)[0])
    alpha = float(accepted)
    per_pass = (1 - alpha**5) / (1 - alpha) if alpha < 1 else 5.0
    return (
        f"Crafted case q[0] = {[f'{c}/16' for c in qc]}, p[0] = {[f'{c}/16' for c in pc]}: over every "
        f"draft token and a 4 x 4 grid of (u_accept, u_sample), your step accepted the draft "
        f"{alpha:.1%} of the time (the acceptance rate Σ min(p, q) = {expected:.1%}), and the first token "
        f"came out distributed exactly as p[0]. At that rate α, γ = 4 drafts give (1 - α^5) / (1 - α) = "
        f"{per_pass:.2f} tokens per target pass on average (Leviathan et al. 2023)."
    )


def run(session: SubmissionLink, seed: int | None = None) -> CheckReport:
    """The battery; `seed` makes a run reproducible (tests), None draws fresh inputs (grading)."""
    report = CheckReport()
    rng = Rng(seed)
    evidence = Evidence()

    def check(name: str, case: tuple[Any, ...], what: str) -> None:
        def body() -> None:
            _expect(report, session, evidence, case, what)

        run_test(report, name, body)

    check(
        "γ=4: u_accept equal to p/q rejects draft 1 (the test is strict), a token is drawn from the "
        "normalised residual, and drafts 2 and 3 are dropped",
        crafted_rejection(rng),
        "crafted rejection",
    )
    check(
        "γ=3, every draft accepted: the bonus token is drawn from p[γ]",
        crafted_all_accepted(rng),
        "all accepted",
    )
    check(
        "a rejection with u_sample = 0 never draws a token the residual gives no mass",
        crafted_zero_draw(rng),
        "u_sample = 0",
    )
    for i, telling in enumerate((RESIDUAL_IS_P, DOES_NOT_STOP, BONUS_FROM_LAST_DRAFT)):
        case = random_case(rng, telling)
        gamma, V = case[0].shape[0], case[1].shape[1]
        check(f"random case {i + 1}: γ={gamma}, V={V}", case, f"random case γ={gamma} V={V}")
    figure_test(
        report,
        "over a grid of draws the first token is distributed exactly as p[0]",
        partial(_test_property, report, session, evidence, rng),
    )
    return report

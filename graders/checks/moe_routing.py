"""moe-routing: `route(x, w_router, top_k, renormalize=True)` and `moe_layer(...)`.

Every run draws fresh sizes and weights. route is tried with renormalize left out (Mixtral's
renormalised top-k) and with renormalize=False (DeepSeek-V2's probabilities over all E), so a
softmax over only the top-k logits passes exactly one of the two; on an integer grid of logits,
where many probabilities tie exactly, for "ties to the lower index"; and its experts must come in
descending probability. moe_layer is compared with graders/reference/moe.py with both renormalize
settings and with a capacity small enough that most experts drop assignments (token-major, the
weights not renormalised again); with top_k >= 2 every token writes its output row more than once,
so a scatter that keeps one write per row instead of summing them fails.

The work is measured: one test runs moe_layer under graders/sandbox/work_counter.py's counter,
which adds up the multiply-adds of every matrix product the call makes and its largest tensor;
over 1.5x the routed work of the contract (every expert on every token is E / top_k times it)
fails, with the ratio said in words, and the test's message reports both figures against the
reference's, measured by the same counter. The mistakes it names, and what each returns, are
moe_routing_mistakes.py.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import torch

from graders.checks import moe_routing_cpu
from graders.checks.moe_routing_mistakes import (
    DENSE,
    KNOWN_MISTAKES,
    LAST_WRITE_WINS,
    TIES_HIGHER,
    TOO_MUCH_WORK,
    TOPK_SOFTMAX,
    LayerArgs,
    layer_variants,
    one_write_per_row,
    route_variants,
)
from graders.checks.report import CheckReport, Mismatch, as_tensor, close, explain_difference, run_test
from graders.checks.serving_common import Rng, call_entry, figure_test
from graders.reference.moe import kept_assignments, moe_layer, route, routed_multiply_adds
from graders.sandbox.protocol import SubmissionLink
from graders.sandbox.work_counter import counted_call

SLUG = "moe-routing"
ENTRY_POINT = "route"
LAYER = "moe_layer"
__all__ = ["DENSE", "ENTRY_POINT", "KNOWN_MISTAKES", "LAYER", "SLUG", "TOPK_SOFTMAX", "run"]
MAX_WORK_RATIO = 1.5  # shared/CONTRACT.md: under 1.5 x the routed work


# --- inputs -----------------------------------------------------------------------------------------


def _weights(rng: Rng, d: int, f: int, E: int) -> tuple[torch.Tensor, ...]:
    w_router = rng.randn(d, E) * 1.5 / d**0.5  # logits of a few units: the routing is not one-hot
    w_gate = rng.randn(E, d, f) / d**0.5
    w_up = rng.randn(E, d, f) / d**0.5
    w_down = rng.randn(E, f, d) / f**0.5
    return w_router, w_gate, w_up, w_down


# --- the tests --------------------------------------------------------------------------------------


def _check_route(
    report: CheckReport, got: Any, x: torch.Tensor, w: torch.Tensor, top_k: int, renormalize: bool
) -> None:
    if not isinstance(got, tuple | list) or len(got) != 2:
        raise Mismatch(f"route should return a pair (weights, experts), got {type(got).__name__}")
    weights, experts = as_tensor(got[0], "weights"), as_tensor(got[1], "experts")
    want_w, want_e = route(x, w, top_k, renormalize)
    if experts.dtype != torch.long:
        raise Mismatch(f"experts has dtype {experts.dtype}, expected torch.int64 (a LongTensor)")
    if experts.shape != want_e.shape or weights.shape != want_w.shape:
        raise Mismatch(
            f"route returned weights {tuple(weights.shape)} and experts {tuple(experts.shape)}, "
            f"expected both {tuple(want_e.shape)} (T, top_k)"
        )
    variants = route_variants(x, w, top_k, renormalize)
    if not torch.equal(experts, want_e):
        t = int((experts != want_e).any(-1).nonzero()[0])
        hint = next((f": it looks like {n}" for n, (_, e) in variants if torch.equal(experts, e)), "")
        probs_all = torch.softmax((x @ w).float(), -1)
        in_range = bool(((experts >= 0) & (experts < w.shape[1])).all())
        if not hint and in_range and torch.equal(probs_all.gather(-1, experts), probs_all.gather(-1, want_e)):
            hint = f": it looks like {TIES_HIGHER}"  # the same probabilities, other indices: a tie
        if hint:
            report.diagnose(hint[len(": it looks like ") :])
        probs = torch.softmax((x[t] @ w).float(), -1)
        raise Mismatch(
            f"token {t}'s experts are {experts[t].tolist()}, expected {want_e[t].tolist()} "
            f"(its probabilities: {[round(p, 4) for p in probs.tolist()]}){hint}"
        )
    if not close(weights, want_w):
        hint = next((f": it looks like {n}" for n, (wv, _) in variants if close(weights, wv)), "")
        if hint:
            report.diagnose(hint[len(": it looks like ") :])
        what = f"weights (renormalize={renormalize})"
        raise Mismatch(explain_difference(weights, want_w, what) + hint)


def _test_route(
    report: CheckReport,
    session: SubmissionLink,
    x: torch.Tensor,
    w: torch.Tensor,
    top_k: int,
    renormalize: bool | None,
) -> None:
    kwargs = {} if renormalize is None else {"renormalize": renormalize}
    got = call_entry(session, "route", x, w, top_k, **kwargs)
    _check_route(report, got, x, w, top_k, True if renormalize is None else renormalize)


def _test_layer(
    report: CheckReport,
    session: SubmissionLink,
    args: LayerArgs,
    top_k: int,
    renormalize: bool | None,
    capacity: int | None,
) -> None:
    kwargs: dict[str, Any] = {}
    if renormalize is not None:
        kwargs["renormalize"] = renormalize
    if capacity is not None:
        kwargs["capacity"] = capacity
    norm = True if renormalize is None else renormalize
    got = as_tensor(call_entry(session, LAYER, *args, top_k, **kwargs), "moe_layer's output")
    want = moe_layer(*args, top_k, norm, capacity)
    _judge_layer(report, got, want, args, top_k, norm, capacity)


def _judge_layer(
    report: CheckReport,
    got: torch.Tensor,
    want: torch.Tensor,
    args: LayerArgs,
    top_k: int,
    renormalize: bool,
    capacity: int | None,
) -> None:
    if close(got, want):
        return
    message = explain_difference(got, want, "moe_layer's output")
    if got.shape == want.shape:
        for name, wrong in layer_variants(args, top_k, renormalize, capacity):
            if close(got, wrong.float()):
                report.diagnose(name)
                message += f": it looks like {name}"
                break
        if ": it looks like" not in message and one_write_per_row(got, args, top_k, renormalize, capacity):
            report.diagnose(LAST_WRITE_WINS)
            message += f": it looks like {LAST_WRITE_WINS}"
    raise Mismatch(message)


def _test_work(report: CheckReport, session: SubmissionLink, rng: Rng) -> str:
    """moe_layer counted: multiply-adds and largest tensor against the routed work and the reference's."""
    T, d, f, E, top_k = 48, 16, 32, 8, 2
    x = rng.randn(T, d)
    w_router, w_gate, w_up, w_down = _weights(rng, d, f, E)
    args: LayerArgs = (x, w_router, w_gate, w_up, w_down)
    try:
        got, largest, madds = session.call_counted(LAYER, *args, top_k)
    except AttributeError:  # pragma: no cover - every SubmissionLink has it
        raise Mismatch("this grader cannot count multiply-adds") from None
    out = as_tensor(got, "moe_layer's output")
    want = moe_layer(*args, top_k)
    _judge_layer(report, out, want, args, top_k, True, None)
    _, ref_largest, ref_madds = counted_call(moe_layer, args + (top_k,), {})
    routed = routed_multiply_adds(T, d, f, E, top_k)
    ratio = madds / routed
    dense = T * E * 3 * d * f + T * d * E
    if ratio > MAX_WORK_RATIO:
        what = DENSE if madds >= 0.9 * dense else TOO_MUCH_WORK
        sentence = (
            f"{what}: your moe_layer did {madds:,} multiply-adds in its matrix products, {ratio:.2f}x the "
            f"routed work of T x top_k x 3 x d x f + T x d x E = {routed:,} (every expert on every token "
            f"would be {dense:,}, {dense / routed:.1f}x); each expert must run only on the tokens routed "
            "to it"
        )
        report.diagnose(sentence if what == TOO_MUCH_WORK else DENSE)
        raise Mismatch(f"{sentence} (T={T}, d={d}, f={f}, E={E}, top_k={top_k})")
    return (
        f"Measured on T={T}, d={d}, f={f}, E={E}, top_k={top_k}: your moe_layer did {madds:,} "
        f"multiply-adds ({ratio:.2f}x the routed work, {routed:,}; the reference {ref_madds:,}) and its "
        "largest tensor held "
        f"{largest:,} numbers (the reference's {ref_largest:,})."
    )


def capacity_tokens(rng: Rng, T: int, d: int, w_router: torch.Tensor, top_k: int, cap: int) -> torch.Tensor:
    """Tokens on which the capacity rule shows: filling slot by slot keeps other assignments than
    token order does, and some token keeps one assignment while losing another (so renormalising
    the kept weights again changes its output)."""
    E = w_router.shape[1]
    x = rng.randn(T, d)
    for _ in range(200):
        _, experts = route(x, w_router, top_k)
        keep = kept_assignments(experts, E, cap)
        by_slot = kept_assignments(experts.T.contiguous(), E, cap).T
        partial_drop = bool((keep.any(-1) & ~keep.all(-1)).any())
        if partial_drop and not torch.equal(keep, by_slot):
            break
        x = rng.randn(T, d)
    return x


def run(session: SubmissionLink, seed: int | None = None) -> CheckReport:
    """The battery; `seed` makes a run reproducible (tests), None draws fresh inputs (grading)."""
    report = CheckReport()
    rng = Rng(seed)
    py = rng.py
    check = partial(run_test, report)

    E = py.choice([5, 6, 8])
    top_k = py.choice([2, 3])
    T, d, f = py.randint(6, 11), py.choice([8, 12]), py.choice([16, 24])
    w_router, w_gate, w_up, w_down = _weights(rng, d, f, E)
    x = rng.randn(T, d)
    check(
        f"route: the top {top_k} of {E} experts, renormalised (renormalize left out), T={T} d={d}",
        partial(_test_route, report, session, x, w_router, top_k, None),
    )
    check(
        f"route with renormalize=False: the top {top_k} probabilities over all {E} experts, as they are",
        partial(_test_route, report, session, x, w_router, top_k, False),
    )
    # Integer inputs and router weights: integer logits, so many probabilities tie exactly.
    xi = torch.randint(-1, 2, (12, 4), generator=rng.torch).float()
    wi = torch.randint(-1, 2, (4, E), generator=rng.torch).float()
    wi[:, 1] = wi[:, 0]  # two identical experts tie on every token
    wi[:, E - 1] = wi[:, E - 2]
    check(
        f"route with ties: integer logits, experts 0 and 1 (and {E - 2} and {E - 1}) identical, "
        f"top_k={top_k}",
        partial(_test_route, report, session, xi, wi, top_k, False),
    )
    check(
        "route with top_k=1 and renormalize=True: every weight is 1.0",
        partial(_test_route, report, session, rng.randn(T, d), w_router, 1, True),
    )
    args: LayerArgs = (x, w_router, w_gate, w_up, w_down)
    check(
        f"moe_layer: each token's {top_k} experts weighted and summed (renormalize, capacity left out)",
        partial(_test_layer, report, session, args, top_k, None, None),
    )
    check(
        "moe_layer with renormalize=False",
        partial(_test_layer, report, session, args, top_k, False, None),
    )
    T2 = py.randint(12, 17)
    cap = max(1, T2 * top_k // E - 1)  # below the average load: most experts drop assignments
    x2 = capacity_tokens(rng, T2, d, w_router, top_k, cap)
    args2: LayerArgs = (x2, w_router, w_gate, w_up, w_down)
    check(
        f"moe_layer with capacity={cap} (T={T2}, top_k={top_k}, E={E}): each expert keeps its first {cap} "
        "assignments by token index",
        partial(_test_layer, report, session, args2, top_k, True, cap),
    )
    check(
        f"moe_layer with capacity={cap} and renormalize=False",
        partial(_test_layer, report, session, args2, top_k, False, cap),
    )
    figure_test(
        report,
        "moe_layer's work: multiply-adds counted, under 1.5x the routed work (T=48, E=8, top_k=2)",
        partial(_test_work, report, session, rng),
    )
    figure_test(  # the counter explains; what decides is measured outside the child
        report,
        "moe_layer's CPU time, measured outside its process: under 6x the reference's + 0.1 s "
        "(T=2048, E=64, top_k=1)",
        partial(moe_routing_cpu.test_cpu_time, report, session, rng),
    )
    return report

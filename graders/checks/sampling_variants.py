"""The sampling battery's wrong samplers and inputs: what a mistake looks like, and logits that show it.

`variant` is filter_probs with one step done wrong; `filter_variants` names each of them. The
inputs keep every decision away from rounding: logits on a grid of 1/32, top_p and u at least
MARGIN from any cumulative sum, and `telling_case` draws a combined call for which every wrong
order gives its own answer.
"""

from __future__ import annotations

import torch

from graders.checks.report import close
from graders.checks.serving_common import Rng
from graders.reference.sampling import descending_order, filter_probs

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
    TEMPERATURE_MULTIPLIES,
    TEMPERATURE_LAST,
    TEMPERATURE_IGNORED,
    GREEDY_NAN,
    GREEDY_SPLITS_TIES,
    GREEDY_LAST_INDEX,
    TOP_K_KEEPS_TIES,
    TOP_K_HIGHER_INDEX,
    TOP_K_IGNORED,
    TOP_K_TOO_LARGE,
    TOP_P_BEFORE_TOP_K,
    TOP_P_DROPS_CROSSING,
    TOP_P_IGNORED,
    NOT_RENORMALISED,
    SORTED_CDF,
    CDF_GE,
    SAMPLE_IGNORES_FILTERS,
    BAD_ARGUMENTS,
)

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

"""llama-block-decode's cost report: one decode call (T = 1) on a long cache, counted against the
reference's call on the same inputs (graders/checks/cost.py says what is counted and why it only
informs). The reference repeats the kv heads for the scores as Hugging Face's repeat_kv does, so
its largest tensor is the repeated cache, H / H_kv times the cache; a solution that reads each kv
head through a broadcast shows less, one that builds an (S, S) mask or repeats more shows more."""

from __future__ import annotations

import torch

from graders.checks import cost
from graders.checks.attention_common import submission_context
from graders.checks.report import ATOL, RTOL, Mismatch, explain_difference
from graders.checks.rope_common import call_layer
from graders.checks.serving_common import Rng
from graders.reference.llama import llama_block, random_weights

ENTRY_POINT = "llama_block"
COST = (2, 511, 64, 8, 2, 16, 128)  # B, cached tokens, d, H, H_kv, hd, f: S = 512 after the call
NAME = (
    "a decode call's cost: multiply-adds and largest tensor counted against the reference's "
    f"(B={COST[0]}, {COST[1]} cached tokens, d={COST[2]}, H={COST[3]}, H_kv={COST[4]}, f={COST[6]})"
)


def figure(rng: Rng, measure: cost.Measure) -> str:
    """The cost sentence; a Mismatch when the counted call's y is wrong (that part decides)."""
    B, P, d, H, H_kv, hd, f = COST
    weights = random_weights(rng.torch, d, H, H_kv, hd, f)
    x = rng.randn(B, 1, d)
    past = {"k": rng.randn(B, H_kv, P, hd), "v": rng.randn(B, H_kv, P, hd)}
    what = f"one decode call on {P} cached positions, cache['k'] (B, H_kv, S, hd) = {(B, H_kv, P, hd)}"
    with submission_context(what):
        got, _, figures = measure(ENTRY_POINT, (x, weights, H, H_kv, past), llama_block)
    y, _ = call_layer(got, what)
    # Against one float64 pass, the tolerance widened in proportion to the position beyond 64: float32
    # formulations of RoPE's angles differ by about p x 6e-8 (shared/CONTRACT.md, RoPE).
    doubled = {name: w.double() for name, w in weights.items()}
    want, _ = llama_block(x.double(), doubled, H, H_kv, {name: t.double() for name, t in past.items()})
    widen = (P + 1) / 64
    if not (y.shape == want.shape and torch.allclose(y.double(), want, rtol=RTOL * widen, atol=ATOL * widen)):
        raise Mismatch(explain_difference(y, want.float(), f"{what}, y (B, 1, d)"))
    return cost.sentence("your decode call", *figures)

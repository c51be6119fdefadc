"""decode-step's cost report: one step on a long cache the grader built, counted against the
reference's step on the same inputs (graders/checks/cost.py says what is counted and why it only
informs). A decode step needs 3d^2 + 2 H t hd + d^2 multiply-adds per row and nothing bigger than
the cache with its new row; a step that builds a (t, t) causal mask shows here as a larger tensor."""

from __future__ import annotations

import torch

from graders.checks import cost
from graders.checks.attention_common import randn, random_attention_weights, submission_context
from graders.checks.report import Mismatch, close, explain_difference
from graders.reference.decode import step as reference_step
from graders.sandbox.protocol import SubmissionLink

ENTRY_POINT = "step"
COST = (2, 511, 128, 4)  # B, cached tokens, d, n_heads: t = 512 after the step, hd = 32
NAME = (
    f"a decode step's cost: multiply-adds and largest tensor counted against the reference's "
    f"(B={COST[0]}, {COST[1]} cached tokens, d={COST[2]}, n_heads={COST[3]})"
)


def figure(session: SubmissionLink, gen: torch.Generator) -> str:
    """The cost sentence; a Mismatch when the counted step's output is wrong (that part decides)."""
    B, P, d, h = COST
    w_qkv, w_o = random_attention_weights(gen, d)
    x = randn(gen, B, 1, d)
    past = {"k": randn(gen, B, h, P, d // h), "v": randn(gen, B, h, P, d // h)}
    what = f"one step on a {P}-token cache the grader built, each (B, n_heads, t, hd) = {(B, h, P, d // h)}"
    with submission_context(what):
        got, _, figures = cost.measurer(session)(ENTRY_POINT, (x, w_qkv, w_o, h, past), reference_step)
    want = reference_step(
        x.double(), w_qkv.double(), w_o.double(), h, {k: v.double() for k, v in past.items()}
    )
    if not isinstance(got, torch.Tensor):
        raise Mismatch(f"{what}: step returned {type(got).__name__}, expected a (B, 1, d) tensor")
    if not close(got, want.float()):
        raise Mismatch(explain_difference(got, want.float(), f"{what}: the output (B, 1, d)"))
    return cost.sentence("your decode step", *figures)

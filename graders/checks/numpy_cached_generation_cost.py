"""numpy-cached-generation's cost report: one decode_step on a long cache the grader built (in the
submission's process, with the extra keys its own prefill keeps), counted against the reference's
step on the same inputs (graders/checks/cost.py says what is counted and
why it only informs; graders/sandbox/numpy_work_counter.py counts the NumPy side).

A decode step over a cache of t rows (t + 1 after its own) needs 3 d^2 multiply-adds for the new
token's q, k and v, 2 (t + 1) d for its scores and its weighted sum of the values, d^2 for W_o and
d V for W_lm; nothing it makes is bigger than a cache with the new row, (t + 1, d). A step that
re-does work per token shows here: multiplying W_o by W_lm first costs d^2 V every step, where
the context times W_o costs d^2.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from graders.checks import cost
from graders.checks.attention_common import submission_context
from graders.checks.report import Mismatch, close, explain_difference
from graders.reference.numpy_generation import Params
from graders.reference.numpy_generation import decode_step as reference_decode_step
from graders.reference.numpy_generation import prefill as reference_prefill
from graders.sandbox.protocol import Handle, SubmissionLink
from graders.sandbox.work_counter import counted_call

ENTRY_POINT = "decode_step"
COST = (511, 64, 128)  # cached tokens, d, V: the step's own row makes t = 512
NAME = (
    f"a decode step's cost: multiply-adds and largest array counted against the reference's "
    f"({COST[0]} cached tokens, d={COST[1]}, V={COST[2]})"
)
FLOAT64_BYTES = 8
MakeParams = Callable[[np.random.Generator, int, int], dict[str, np.ndarray]]  # (rng, V, d) -> params
# (params, tokens, the reference's cache) -> that cache in the submission's process, with the
# extra keys its own prefill puts there (the battery's, so this call gets what every other gets)
TheirCache = Callable[[Params, list[int], dict[str, np.ndarray]], Handle]


def figure(
    session: SubmissionLink, rng: np.random.Generator, make_params: MakeParams, their_cache: TheirCache
) -> str:
    """The cost sentence; a Mismatch when the counted step's logits are wrong (that part decides)."""
    P, d, V = COST
    if not session.has(ENTRY_POINT):
        raise Mismatch("define decode_step(params, token, cache) at the top level of your file")
    params = make_params(rng, V, d)
    tokens = [int(t) for t in rng.integers(V, size=P)]
    past, _ = reference_prefill(params, tokens)  # k, v (P, d): the cache of those tokens
    cache = their_cache(params, tokens, past)
    token = int(rng.integers(V))
    what = f"one decode_step on a {P}-token cache the grader built, k and v {(P, d)} each"
    with submission_context(what):
        got, largest, madds = session.call_counted(ENTRY_POINT, params, token, cache)
    want, ref_largest, ref_madds = counted_call(reference_decode_step, (params, token, dict(past)), {})
    if isinstance(got, torch.Tensor):
        raise Mismatch(f"{what}: decode_step returned a torch tensor; this challenge is NumPy only")
    if not isinstance(got, np.ndarray) or got.shape != (V,) or got.dtype.kind != "f":
        shape = getattr(got, "shape", None)
        raise Mismatch(
            f"{what}: decode_step returned {type(got).__name__} {shape or ''}, expected float logits ({V},)"
        )
    g, w = torch.from_numpy(got.astype(np.float64)), torch.from_numpy(want)
    if not close(g, w):
        raise Mismatch(explain_difference(g, w, f"{what}: the logit vector ({V},)"))
    figures = (madds, largest, ref_madds, ref_largest)
    return cost.sentence("your decode step", *figures, itemsize=FLOAT64_BYTES, library="NumPy")

"""gqa-attention's cost report: one decode call (T = 1) of the submission's GQA module on a long
cache, counted against the reference module's call on the same weights and inputs
(graders/checks/cost.py says what is counted and why it only informs). The reference repeats the kv
heads for the scores, so its largest tensor is the repeated cache, n_q / n_kv times the cache; a
module that reads each kv head through a broadcast (or sdpa's enable_gqa) shows less, one that
builds an (S, S) mask shows more."""

from __future__ import annotations

from typing import Any, Protocol

import torch

from graders.checks import cost
from graders.checks.attention_common import randn, submission_context
from graders.checks.report import Mismatch, close, explain_difference
from graders.reference.gqa import GQA
from graders.sandbox.protocol import Handle, SubmissionLink

COST = (2, 511, 128, 8, 2)  # B, cached positions, d, n_q, n_kv: S = 512 after the call, hd = 16


def name() -> str:
    B, P, d, n_q, n_kv = COST
    return (
        "a decode call's cost: multiply-adds and largest tensor counted against the reference's "
        f"(B={B}, {P} cached positions, d={d}, n_q={n_q}, n_kv={n_kv})"
    )


class Layer(Protocol):
    """What gqa_attention's _Layer offers: the submission's module built with our weights."""

    state: dict[str, torch.Tensor]

    def build(self, session: SubmissionLink) -> Handle: ...

    def reference(self, x: torch.Tensor, cache: Any = None) -> tuple[torch.Tensor, Any]: ...


def figure(session: SubmissionLink, layer: Layer, gen: torch.Generator) -> str:
    """The cost sentence; a Mismatch when the counted call's y is wrong (that part decides)."""
    B, P, d, n_q, n_kv = COST
    hd = d // n_q
    module = layer.build(session)
    x = randn(gen, B, 1, d)
    past = (randn(gen, B, n_kv, P, hd), randn(gen, B, n_kv, P, hd))
    reference = GQA(d, n_q, n_kv)
    reference.load_state_dict(layer.state)
    what = f"forward(x, cache) with x {tuple(x.shape)} and a cache k {tuple(past[0].shape)}"
    with submission_context(what), torch.no_grad():
        got, _, figures = cost.measurer(session)(module, (x, past), reference)
    if not isinstance(got, tuple | list) or len(got) != 2 or not isinstance(got[0], torch.Tensor):
        raise Mismatch(f"{what} should return a pair (y, (k, v))")
    want = layer.reference(x, past)[0].float()
    if not close(got[0], want):
        raise Mismatch(explain_difference(got[0], want, f"{what}: y (B, 1, d)"))
    return cost.sentence("your decode call", *figures)

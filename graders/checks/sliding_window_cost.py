"""sliding-window-cache's cost report: one decode update (n = 1) on a full window, counted against the
reference's update on the same inputs (graders/checks/cost.py says what is counted and why it only
informs).

An update does no matrix product, so both sides count 0 multiply-adds; the figure that matters is
the largest tensor. The reference writes the new token into its ring slot in place and gathers the
kept tokens in position order once: its largest tensor is what it returns, (B, H, n_sink + window,
hd). An update that unrolls the ring by concatenating it with itself, or that keeps a copy of the
history, shows here as a larger one."""

from __future__ import annotations

from typing import Any

import torch

from graders.checks import cost
from graders.checks.attention_common import decode_tensor, describe, randn, submission_context
from graders.checks.report import Mismatch, close, explain_difference
from graders.reference.sliding_window import SlidingWindowCache
from graders.sandbox.protocol import Handle, SubmissionLink
from graders.sandbox.work_counter import counted_call

ENTRY_POINT = "SlidingWindowCache"
COST = (252, 4, 1, 4, 32)  # window, n_sink, B, H, hd: K = n_sink + window = 256 kept, 128 KiB each
NAME = (
    "an update's cost: multiply-adds and largest tensor counted against the reference's "
    f"(one token into a full window={COST[0]}, n_sink={COST[1]}, B={COST[2]}, H={COST[3]}, hd={COST[4]})"
)


def figure(session: SubmissionLink, gen: torch.Generator) -> str:
    """The cost sentence; a Mismatch when the counted update's answer is wrong (that part decides)."""
    window, n_sink, B, H, hd = COST
    seen = n_sink + window + int(torch.randint(0, window, (1,), generator=gen))  # full, wrapped anywhere
    prefill = randn(gen, B, H, seen, hd), randn(gen, B, H, seen, hd)
    k, v = randn(gen, B, H, 1, hd), randn(gen, B, H, 1, hd)
    what = f"update(k, v) with n=1 after {seen} tokens"
    with submission_context(f"SlidingWindowCache{COST}, then {what}"):
        cache: Handle = session.call(ENTRY_POINT, *COST, keep=True)
        session.call_later(cache.update, *prefill, keep=True)  # goes out with the counted call
        got, largest, madds = session.call_counted(cache.update, k, v)
    ref = SlidingWindowCache(*COST)
    ref.update(*prefill)
    want, ref_largest, ref_madds = counted_call(ref.update, (k, v), {})
    _expect_same(got, want, what)
    return cost.sentence(f"your update after {seen} tokens", madds, largest, ref_madds, ref_largest)


def _expect_same(got: Any, want: tuple[torch.Tensor, torch.Tensor, torch.Tensor], what: str) -> None:
    if not isinstance(got, tuple | list) or len(got) != 3:
        raise Mismatch(f"{what} should return (k_kept, v_kept, positions), got {describe(got)}")
    for value, expected, name in zip(got, want, ("k_kept", "v_kept", "positions"), strict=True):
        tensor = decode_tensor(value, f"{what}: {name}")
        if name == "positions":
            if tensor.is_floating_point() or not torch.equal(tensor.long(), expected):
                raise Mismatch(f"{what}: positions are {tensor.tolist()}, expected {expected.tolist()}")
        elif not close(tensor, expected):
            raise Mismatch(f"{what}: " + explain_difference(tensor, expected, f"{name} (B, H, K, hd)"))

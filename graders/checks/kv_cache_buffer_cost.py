"""kv-cache-buffer's cost report: one decode update (n = 1) into a long preallocated cache, counted
against the reference's update on the same inputs (graders/checks/cost.py says what is counted and
why it only informs).

An update does no matrix product, so both sides count 0 multiply-adds; the figure that matters is
the largest tensor. The reference writes the new position in place and slices views, which makes no
tensor at all; an update that rebuilds the layer with torch.cat (and copies it back, so its views
still hold) shows here as a tensor the size of the whole layer, every step."""

from __future__ import annotations

from graders.checks import cost
from graders.checks.attention_common import submission_context
from graders.checks.kv_cache_buffer_replay import Dims, Rng, method_later, new_cache, pair
from graders.checks.report import Mismatch, close, explain_difference
from graders.reference.kv_cache import KVCache
from graders.sandbox.protocol import SubmissionLink
from graders.sandbox.work_counter import counted_call

COST = Dims(2, 1, 4, 512, 16)  # one layer's k is (B, H, max_len, hd) = (1, 4, 512, 16): 128 KiB
NAME = (
    "an update's cost: multiply-adds and largest tensor counted against the reference's "
    f"(one new position into a cache of max_len={COST.max_len}, B={COST.batch}, H={COST.n_heads}, "
    f"hd={COST.head_dim})"
)


def figure(session: SubmissionLink, rng: Rng) -> str:
    """The cost sentence; a Mismatch when the counted update's (k_all, v_all) is wrong (that part decides)."""
    layer = rng.py.randrange(COST.n_layers)
    start = rng.py.randint(COST.max_len * 3 // 4, COST.max_len - 1)  # a long cache, the new position fits
    prefill, step = rng.update(COST, layer, 0, start), rng.update(COST, layer, start, 1)
    what = f"update(layer={layer}, k, v, start={start}) with n=1 after a prefill of {start} positions"
    cache = new_cache(session, COST)
    # The prefill's answer stays in the child (keep=True): it goes out with the counted call, and
    # an exception it raises is raised by that call.
    method_later(session, cache, "update", layer, prefill.k, prefill.v, 0, keep=True)
    with submission_context(what):
        got, largest, madds = session.call_counted(cache.update, layer, step.k, step.v, start)
    ref = KVCache(*COST.args())
    ref.update(layer, prefill.k, prefill.v, 0)
    (want_k, want_v), ref_largest, ref_madds = counted_call(ref.update, (layer, step.k, step.v, start), {})
    got_k, got_v = pair(got, what)
    for part, want, name in ((got_k, want_k, "k_all"), (got_v, want_v, "v_all")):
        if not close(part, want):
            raise Mismatch(f"{what}: " + explain_difference(part, want, f"{name} (B, H, start + 1, hd)"))
    return cost.sentence(f"your update at start={start}", madds, largest, ref_madds, ref_largest)

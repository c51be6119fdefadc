"""paged-kv-cache's cost report: one paged_attention call over a few long sequences, counted against
the reference's call on the same inputs (graders/checks/cost.py says what is counted and why it only
informs).

The baseline is the reference's explicit path (graders/reference/paged_cache.py, attend_gathered),
the one the worked solution takes: each sequence's blocks gathered in table order, so its largest
tensor is the longest sequence's keys, (H, blocks x block_size, hd), and its multiply-adds are
H x L x 2 hd per sequence. A call that pads every block table to the longest and indexes the whole
batch at once (the reference's batched path) shows B times that tensor and the padding's products;
one that attends over the whole pool shows more still."""

from __future__ import annotations

from graders.checks import cost
from graders.checks.attention_common import submission_context
from graders.checks.paged_kv_driver import ENTRY_POINT
from graders.checks.report import Mismatch, as_tensor, close, explain_difference
from graders.checks.serving_common import Rng, call_entry, entry_point_call
from graders.reference.paged_cache import PagedKVCache, attend_gathered, blocks_for
from graders.sandbox.protocol import Handle, SubmissionLink
from graders.sandbox.work_counter import counted_call

ATTENTION = "paged_attention"
COST = (3, 32, 4, 16, 256, 511)  # sequences, block_size, n_heads, head_dim (all four differ), lengths
N_BLOCKS = COST[0] * blocks_for(COST[5], COST[1])  # room for every sequence at its longest
NAME = (
    "paged_attention's cost: multiply-adds and largest tensor counted against the reference's "
    f"({COST[0]} sequences of {COST[4]}-{COST[5]} tokens in blocks of {COST[1]}, n_heads={COST[2]}, "
    f"head_dim={COST[3]})"
)


def figure(session: SubmissionLink, rng: Rng) -> str:
    """The cost sentence; a Mismatch when the counted call's output is wrong (that part decides)."""
    n_seqs, bs, H, hd, shortest, longest = COST
    lengths = [rng.py.randint(shortest, longest) for _ in range(n_seqs)]
    seq_ids = rng.py.sample(range(200, 300), n_seqs)
    kv = [(rng.randn(H, n, hd), rng.randn(H, n, hd)) for n in lengths]
    q = rng.randn(n_seqs, H, 1, hd)  # (B, H, 1, hd), one query per sequence
    cache = call_entry(session, ENTRY_POINT, N_BLOCKS, bs, H, hd, keep=True)
    if not isinstance(cache, Handle):  # pragma: no cover - keep=True always hands back a Handle
        raise Mismatch("PagedKVCache(...) should build an object")
    for seq, (k, v) in zip(seq_ids, kv, strict=True):  # they go out with the counted call
        session.call_later(cache.append, seq, k, v)
    over = f"over sequences of {', '.join(map(str, lengths))} tokens"
    what = f"paged_attention(q, cache, seq_ids) {over} in blocks of {bs}, q (B, H, 1, hd) = {tuple(q.shape)}"
    with submission_context(what):
        got, largest, madds = entry_point_call(
            session,
            ATTENTION,
            lambda: session.call_counted(ATTENTION, q, cache, seq_ids),
            missing="your code defines no top-level `{name}`: the grader calls it",
        )
    ref = PagedKVCache(N_BLOCKS, bs, H, hd)
    for seq, (k, v) in zip(seq_ids, kv, strict=True):
        ref.append(seq, k, v)
    want, ref_largest, ref_madds = counted_call(attend_gathered, (q, ref, seq_ids), {})
    got = as_tensor(got, "paged_attention(q, cache, seq_ids)")
    if not close(got, want):
        raise Mismatch(f"{what}: " + explain_difference(got, want, "the output (B, n_heads, 1, head_dim)"))
    return cost.sentence(f"your paged_attention {over}", madds, largest, ref_madds, ref_largest)

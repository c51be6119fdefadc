"""tiled-attention: `tiled_attention(q, k, v, block_size, causal=False)` and `merge_attention`.

tiled_attention is compared with graders/reference/tiled.py (float64, from the same float32
inputs) for block sizes that divide Tk and that do not, block_size 1 and block_size > Tk,
causal and not, Tq < Tk, fully masked blocks, and scores far beyond exp's float32 range.
The magnitude tests use q and k on a 1/64 grid with a head size of 4, so every float32 score
(and the 1/sqrt(4) scale) is exact and only the submission's handling of exp is tested.

The memory property is measured, not trusted to the code's look: *every* call runs under
graders/sandbox/footprint.py's recorder, which reports the largest floating-point tensor the
call built, and wherever the full score matrix would be bigger than the allowance
(B * H * max(Tq * block_size, (Tk + block_size) * hd, Tq * hd): a block of scores, a padded
copy of k or v, the running output) a call that went over it fails, saying so in words.
That recorder runs in the submission's process, so it can only fail a call, never pass one:
around every call the grader also reads the kernel's peak of the process's resident memory
(graders/sandbox/outside.py), and a call whose peak beyond the unloaded process exceeds
resident_budget() fails whatever the recorder said. That budget decides only calls whose full
score matrix is at least twice it (kernel_decides): one test (Tq = Tk around 2,800, a full score
matrix of 26-34 MiB) is sized for it, while on the small ones a fresh process's first touch of
torch's code pages would be as big as the margin.
merge_attention is compared on parts split from one attention, with empty parts and huge
log-sum-exps. The mistakes it names, and what each returns, are in tiled_attention_mistakes.py.
"""

from __future__ import annotations

import contextlib
import math
import random
from collections.abc import Callable
from functools import partial

import torch

from graders.checks.attention_common import (
    compare,
    decode_tensor,
    describe,
    fail,
    make_generator,
    randn,
    submission_context,
)
from graders.checks.remembered import remembered
from graders.checks.report import CheckReport, Mismatch, run_test
from graders.checks.tiled_attention_mistakes import (
    BIGGER_THAN_A_BLOCK,
    FULL_SCORES,
    KNOWN_MISTAKES,
    MASKED_BLOCK_NAN,
    MERGE_EMPTY,
    MERGE_OVERFLOW,
    NAN,
    OVERFLOW,
    lse_variants,
    merge_variants,
    tiled_variants,
)
from graders.reference.tiled import attention_fused, causal_visible, merge_attention
from graders.sandbox import outside
from graders.sandbox.outside import PeakWatch
from graders.sandbox.protocol import SubmissionLink

SLUG = "tiled-attention"
ENTRY_POINT = "tiled_attention"
MERGE = "merge_attention"
__all__ = ["ENTRY_POINT", "KNOWN_MISTAKES", "MERGE", "SLUG", "run"]


GRID = 64  # q and k of the magnitude tests are multiples of 1/64
# The float64 answer, once per inputs within a scope: every golden case on a seed draws the same ones.
_reference = remembered(attention_fused)


# --- calling the submission -----------------------------------------------------------------------


def allowance(B: int, H: int, Tq: int, Tk: int, hd: int, block_size: int) -> int:
    """The most float elements one tensor may hold: a block of scores, a padded k or v, the output."""
    return B * H * max(Tq * block_size, (Tk + block_size) * hd, Tq * hd)


def resident_budget(B: int, H: int, Tq: int, Tk: int, hd: int, allowed: int) -> int:
    """Bytes the call may hold at its peak beyond the process before its code was loaded: the
    inputs and output twice over (as received and as made), a few tensors of the allowance, and
    the measurement's slack. A full score matrix is over it once it is a few times the slack."""
    io = 4 * B * H * (2 * Tq + 2 * Tk) * hd  # float32 q, k, v and the output
    return outside.SLACK_BYTES + 2 * io + 4 * 4 * allowed


def kernel_decides(B: int, H: int, Tq: int, Tk: int, hd: int, allowed: int) -> bool:
    """Whether the kernel's count can decide this call: its full score matrix is at least twice the
    budget. On smaller calls the pages of torch's code a fresh process touches for the first time
    (several MiB, more on some CPUs' kernels) are as big as the rule's margin, so the recorder
    alone judges them and the large test is the one the kernel decides."""
    return 4 * B * H * Tq * Tk >= 2 * resident_budget(B, H, Tq, Tk, hd, allowed)


def _expect_resident_within(
    report: CheckReport, watch: PeakWatch, what: str, B: int, H: int, Tq: int, Tk: int, hd: int, allowed: int
) -> None:
    """Fail when the kernel saw the process hold more than the budget during the call.

    This decides the verdict whatever the process reported about itself (the largest tensor its
    recorder saw explains a failure, it never passes one): the submission cannot reach /proc."""
    budget = resident_budget(B, H, Tq, Tk, hd, allowed)
    if watch.above_floor <= budget:
        return
    mib = 1 << 20
    sentence = (
        f"{FULL_SCORES}: while it ran, the kernel counted {watch.above_floor / mib:.1f} MiB of memory "
        f"held by your code's process beyond what it held before your code was loaded, while the full "
        f"score matrix here (B x H x Tq x Tk = {B * H * Tq * Tk:,} float32) is "
        f"{4 * B * H * Tq * Tk / mib:.1f} MiB and blocks of Tq x block_size scores, the inputs and "
        f"the output fit in {budget / mib:.1f} MiB; "
        "tiled attention must never hold more than Tq x block_size scores per (batch, head) at once"
    )
    report.diagnose(sentence)
    raise Mismatch(f"{what}: your code {sentence}")


def _call_tiled(
    session: SubmissionLink,
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    block_size: int,
    causal: bool | None,
    report: CheckReport,
    what: str,
) -> torch.Tensor:
    """Call tiled_attention (causal left out when None), measured; Mismatch when it built the full scores."""
    kwargs = {} if causal is None else {"causal": causal}
    watch = session.peak_watch()
    with submission_context(f"{what}: q {tuple(q.shape)}, k {tuple(k.shape)}, block_size={block_size}"):
        with watch or contextlib.nullcontext():
            got, largest = session.call_measured(ENTRY_POINT, q, k, v, block_size, **kwargs)
    B, H, Tq, hd = q.shape
    Tk = k.shape[-2]
    allowed = allowance(B, H, Tq, Tk, hd, block_size)
    if block_size < Tk and B * H * Tq * Tk > allowed and largest > allowed:
        what_it_is = FULL_SCORES if largest >= Tq * Tk else BIGGER_THAN_A_BLOCK
        sentence = (
            f"{what_it_is}: the largest floating-point tensor it made held {largest:,} numbers, "
            "while the full "
            f"score matrix here is B x H x Tq x Tk = {B * H * Tq * Tk:,} and a block of scores is "
            f"B x H x Tq x block_size = {B * H * Tq * block_size:,}; tiled attention must never hold more "
            "than Tq x block_size scores per (batch, head) at once"
        )
        report.diagnose(sentence)
        raise Mismatch(f"{what}: your code {sentence}")
    # The recorder above names the tensor when it saw one; the kernel decides whatever it said.
    if watch is not None and block_size < Tk and kernel_decides(B, H, Tq, Tk, hd, allowed):
        _expect_resident_within(report, watch, what, B, H, Tq, Tk, hd, allowed)
    return decode_tensor(got, f"{what}'s output")


def _tiled_test(
    session: SubmissionLink,
    report: CheckReport,
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    block_size: int,
    causal: bool | None,
    not_finite: str | None = MASKED_BLOCK_NAN,
) -> Callable[[], None]:
    is_causal = bool(causal)
    want = _reference(q.double(), k.double(), v.double(), is_causal)  # (B, H, Tq, hd) float64

    def body() -> None:
        got = _call_tiled(session, q, k, v, block_size, causal, report, "tiled_attention")
        variants = partial(tiled_variants, q.double(), k.double(), v.double(), block_size, is_causal)
        result = compare(got, want.float(), "tiled_attention's output", variants, not_finite=not_finite)
        if not result.ok:
            fail(report, result, result.matches[0] if result.matches else ())

    return body


def _grid(gen: torch.Generator, *shape: int, limit: float) -> torch.Tensor:
    """Multiples of 1/64 in [-limit, limit]: products and sums of a few stay exact in float32."""
    steps = int(limit * GRID)
    return torch.randint(-steps, steps + 1, shape, generator=gen).float() / GRID


# --- merge_attention ------------------------------------------------------------------------------


def _merge_test(
    session: SubmissionLink,
    report: CheckReport,
    parts: tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor],
    not_finite: str,
) -> Callable[[], None]:
    o1, l1, o2, l2 = parts
    want_o, want_lse = merge_attention(o1.double(), l1.double(), o2.double(), l2.double())

    def body() -> None:
        if not session.has(MERGE):
            raise Mismatch(f"your code has no top-level `{MERGE}`: the grader calls it by that name")
        with submission_context(f"merge_attention(o1 {tuple(o1.shape)}, lse1 {tuple(l1.shape)}, o2, lse2)"):
            got = session.call(MERGE, o1, l1, o2, l2)
        if not isinstance(got, tuple | list) or len(got) != 2:
            raise Mismatch(f"merge_attention should return a pair (o, lse), got {describe(got)}")
        o = compare(
            got[0],
            want_o.float(),
            "the merged o",
            partial(merge_variants, o1.double(), l1.double(), o2.double(), l2.double()),
            not_finite=not_finite,
        )
        if not o.ok:
            fail(report, o, o.matches[0] if o.matches else ())
        lse = decode_tensor(got[1], "the merged lse")
        finite = torch.isfinite(want_lse)
        if lse.shape != want_lse.shape or not torch.equal(torch.isneginf(lse), torch.isneginf(want_lse)):
            raise Mismatch(
                f"the merged lse has shape {tuple(lse.shape)} or -inf entries where it should not, expected "
                f"{tuple(want_lse.shape)}, -inf only where both parts are -inf"
            )
        result = compare(
            lse[finite],
            want_lse[finite].float(),
            "the merged lse",
            partial(lambda: [(m, t[finite]) for m, t in lse_variants(l1.double(), l2.double())]),
            not_finite=not_finite,
        )
        if not result.ok:
            fail(report, result, result.matches[0] if result.matches else ())

    return body


def _split_parts(
    gen: torch.Generator, B: int, H: int, Tq: int, Tk: int, hd: int, split: int, causal: bool
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Partial (o, lse) over keys [0, split) and [split, Tk) of one attention (float32)."""
    q, k, v = randn(gen, B, H, Tq, hd), randn(gen, B, H, Tk, hd), randn(gen, B, H, Tk, hd)
    mask = causal_visible(Tq, Tk) if causal else torch.ones(Tq, Tk, dtype=torch.bool)
    out = []
    for lo, hi in ((0, split), (split, Tk)):
        scores = q.double() @ k[..., lo:hi, :].double().transpose(-2, -1) / math.sqrt(hd)
        scores = scores.masked_fill(~mask[:, lo:hi], float("-inf"))
        lse = torch.logsumexp(scores, -1)
        o = (torch.exp(scores - lse[..., None]).nan_to_num(0.0) @ v[..., lo:hi, :].double()).float()
        empty = torch.isneginf(lse)[..., None]
        o = torch.where(empty, randn(gen, *o.shape), o)  # an empty part's o is anything: it must not count
        out += [o, lse.float()]
    return out[0], out[1], out[2], out[3]


def _huge_lse_parts(gen: torch.Generator, B: int, H: int, Tq: int, hd: int) -> tuple[torch.Tensor, ...]:
    """lse around +-300 on the 1/64 grid; o in [0.5, 1.5] so float32 rounding of lse stays in tolerance."""
    base = _grid(gen, B, H, Tq, limit=300.0)
    l1, l2 = base + _grid(gen, B, H, Tq, limit=4.0), base + _grid(gen, B, H, Tq, limit=4.0)
    o1 = 0.5 + torch.rand(B, H, Tq, hd, generator=gen)
    o2 = 0.5 + torch.rand(B, H, Tq, hd, generator=gen)
    return o1, l1, o2, l2


def run(session: SubmissionLink, seed: int | None = None) -> CheckReport:
    gen = make_generator(seed)
    rng = random.Random(int(torch.randint(0, 2**31, (1,), generator=gen)))
    report = CheckReport()

    def tiled(name: str, B: int, H: int, Tq: int, Tk: int, hd: int, bs: int, causal: bool | None) -> None:
        q, k, v = randn(gen, B, H, Tq, hd), randn(gen, B, H, Tk, hd), randn(gen, B, H, Tk, hd)
        masked_blocks = bool(causal) and bs < Tk  # some query has a whole block in its future
        run_test(
            report,
            name,
            _tiled_test(session, report, q, k, v, bs, causal, MASKED_BLOCK_NAN if masked_blocks else NAN),
        )

    Tk, Tk2, bs2 = rng.choice([12, 16, 20]), rng.choice([13, 17, 23]), rng.choice([5, 6])
    Tq3, Tk3 = rng.randrange(2, 5), rng.randrange(9, 14)
    Tq5, Tk5 = rng.randrange(3, 7), rng.randrange(8, 15)
    Tk7 = rng.randrange(20, 30)
    # (name, B, H, Tq, Tk, hd, block_size, causal: None = left out)
    cases: list[tuple[str, int, int, int, int, int, int, bool | None]] = [
        (f"matches full attention, block_size 4 divides Tk={Tk}, causal left out, B=2 H=3 hd=8",
         2, 3, Tk, Tk, 8, 4, None),
        (f"a last partial block: Tk={Tk2} with block_size={bs2}, causal=True, B=2 H=2 hd=16",
         2, 2, Tk2, Tk2, 16, bs2, True),
        (f"the causal offset for Tq={Tq3} < Tk={Tk3}: query i sits at Tk - Tq + i, block_size=4, B=1 H=2",
         1, 2, Tq3, Tk3, 8, 4, True),
        ("fully masked blocks: causal Tq=Tk=16 with block_size=3, where query 0 sees one key, B=1 H=1",
         1, 1, 16, 16, 8, 3, True),
        (f"cross-attention shape Tq={Tq5}, Tk={Tk5}, causal=False passed, block_size=1, B=3 H=1 hd=6",
         3, 1, Tq5, Tk5, 6, 1, False),
        ("block_size larger than Tk (a single block), causal=True, B=1 H=2 Tq=Tk=5 hd=8",
         1, 2, 5, 5, 8, 64, True),
        (f"one query (a decode step) over Tk={Tk7} keys, causal=True, block_size=8, B=2 H=4",
         2, 4, 1, Tk7, 8, 8, True),
    ]  # fmt: skip
    for name, B, H, Tq, Tk, hd, bs, causal in cases:
        tiled(name, B, H, Tq, Tk, hd, bs, causal)

    q, k = _grid(gen, 1, 2, 6, 4, limit=16.0), _grid(gen, 1, 2, 21, 4, limit=16.0)
    v = randn(gen, 1, 2, 21, 4)
    run_test(
        report,
        "huge scores (up to hundreds, exact in float32 on a 1/64 grid, hd=4) never overflow, block_size=5",
        _tiled_test(session, report, q, k, v, 5, None, not_finite=OVERFLOW),
    )
    T = rng.randrange(2600, 3000)  # a full score matrix of 26-34 MiB: over twice the kernel's budget
    q, k, v = randn(gen, 1, 1, T, 8), randn(gen, 1, 1, T, 8), randn(gen, 1, 1, T, 8)
    run_test(
        report,
        f"never holds the full score matrix: the kernel measures the process's peak memory, Tq=Tk={T}, "
        "block_size=64",
        _tiled_test(session, report, q, k, v, 64, False),
    )
    q, k, v = randn(gen, 1, 1, 384, 8), randn(gen, 1, 1, 384, 8), randn(gen, 1, 1, 384, 8)
    run_test(
        report,
        "never builds the full score matrix: the largest tensor it makes is measured, Tq=Tk=384, "
        "block_size=16",
        _tiled_test(session, report, q, k, v, 16, True),
    )

    Tq, Tk = rng.randrange(3, 6), rng.randrange(8, 13)
    parts = _split_parts(gen, 2, 2, Tq, Tk, 8, rng.randrange(2, Tk - 1), causal=False)
    run_test(
        report,
        f"merge_attention of two split-K parts (keys split at random, Tk={Tk}) equals attention over all "
        "keys",
        _merge_test(session, report, parts, MERGE_EMPTY),
    )
    o1, l1, o2, l2 = _split_parts(gen, 1, 2, 6, 6, 8, 3, causal=True)
    parts = (o2, l2, o1, l1)  # the part that is empty for some rows comes first
    run_test(
        report,
        "merge_attention where the first part saw no key for some rows (lse = -inf): it contributes nothing",
        _merge_test(session, report, parts, MERGE_EMPTY),
    )
    run_test(
        report,
        "merge_attention with log-sum-exps around 300 (exp(lse) would overflow float32)",
        _merge_test(session, report, _huge_lse_parts(gen, 2, 1, 5, 8), MERGE_OVERFLOW),  # type: ignore[arg-type]
    )
    return report

"""left-padded-decoding: `padded_attention(x, w_qkv, w_o, n_heads, attention_mask, cache=None, base)`.

A batch of prompts of different lengths, padded on the left, is prefilled (in one call or
in chunks) and then decoded a token at a time, the mask growing by a column of ones per
step. At every real position each call's y must equal graders/reference/padding.py's
`padded_attention_by_rows` (each row's real tokens run alone, batch 1, no padding); y must
be finite everywhere; the returned cache must have every slot, and its real slots must
hold the rotated keys and the values.

Every call gets a cache the grader built (see rope_common) whose *padding* slots hold
large random values: a submission that lets any query see a padding key cannot match,
and a changed real slot (the probe) looks like any other call. Masks come as int64 in
some tests and bool in others; the base is the default in some and not in others.

The last test counts one decode step's multiply-adds and largest tensor on a long padded batch
against the reference's (left_padded_decoding_cost.py); it fails only when that step's y is wrong.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import torch

from graders.checks import cost, left_padded_decoding_cost
from graders.checks.attention_common import (
    Comparison,
    Evidence,
    Variant,
    compare,
    make_generator,
    randn,
    random_attention_weights,
    submission_context,
)
from graders.checks.report import CheckReport, Mismatch, close, run_test
from graders.checks.rope_common import (
    BASE_IGNORED,
    DEFAULT_BASE,
    INTERLEAVED,
    cache_tensor,
    call_layer,
    rope_layer,
    wrong_rotations,
)
from graders.checks.serving_common import figure_test
from graders.reference.padding import padded_attention, padded_attention_by_rows, real_positions, visible_keys
from graders.sandbox.protocol import SubmissionLink

SLUG = "left-padded-decoding"
ENTRY_POINT = "padded_attention"

POSITIONS_WITH_PADDING = (
    "RoPE positions count the padding: a real token's position is the number of real tokens before it "
    "in its row (attention_mask.cumsum(-1) - 1), in prefill and in every decode step"
)
PADDING_ATTENDED = (
    "queries attend to padding keys: hide every key whose attention_mask is 0, as well as the future ones"
)
MASK_ONLY_AT_PREFILL = (
    "the padding mask is applied at prefill but not when decoding: a decode step's query must still skip "
    "the padding keys in the cache"
)
NOT_CAUSAL = "real tokens are not causal among themselves: combine the padding mask with the causal mask"
NAN_IN_PADDING = (
    "NaN or inf at padding positions: a padding query sees no real key, so its row of scores is all -inf "
    "and softmax gives NaN; give such rows any finite value (for example, zero them after the softmax)"
)
GLOBAL_STATE = (
    "the output ignored a change to the cached keys and values: read the past only from the cache passed in"
)
KNOWN_MISTAKES = (
    POSITIONS_WITH_PADDING,
    PADDING_ATTENDED,
    MASK_ONLY_AT_PREFILL,
    NOT_CAUSAL,
    NAN_IN_PADDING,
    BASE_IGNORED,
    INTERLEAVED,
    GLOBAL_STATE,
)

BASES = (500.0, 2500.0, 40000.0)
GARBAGE_SCALE = 30.0  # padding slots of the caches the grader hands in


@dataclass
class _Batch:
    """Left-padded tokens x (B, S, d), its mask (B, S), and the references (float64)."""

    gen: torch.Generator
    real: Sequence[int]  # real prompt tokens per row
    steps: int  # decode steps after the prompt
    d: int
    h: int
    base: float
    bool_mask: bool
    extra_pad: int = 0  # padding columns in front of every row
    x: torch.Tensor = field(init=False)

    def __post_init__(self) -> None:
        B, P = len(self.real), max(self.real) + self.extra_pad
        self.prompt = P
        S = P + self.steps
        self.w_qkv, self.w_o = random_attention_weights(self.gen, self.d)
        self.x = randn(self.gen, B, S, self.d)
        mask = torch.zeros(B, S, dtype=torch.long)
        for b, n in enumerate(self.real):
            mask[b, P - n :] = 1
        self.mask = mask
        x64, wq, wo = self.x.double(), self.w_qkv.double(), self.w_o.double()
        self.y = padded_attention_by_rows(x64, wq, wo, self.h, mask, self.base)  # (B, S, d)
        _, cache = padded_attention(x64, wq, wo, self.h, mask, base=self.base)
        hd = self.d // self.h
        pad = ~mask.bool()[:, None, :, None]  # (B, 1, S, 1)
        self.k, self.v = cache["k"], cache["v"]  # (B, h, S, hd)
        garbage = [randn(self.gen, B, self.h, S, hd).double() * GARBAGE_SCALE for _ in range(2)]
        self.sent = {  # what the grader hands in: padding slots hold large random values
            "k": torch.where(pad, garbage[0], self.k),
            "v": torch.where(pad, garbage[1], self.v),
        }

    def mask_until(self, stop: int) -> torch.Tensor:
        m = self.mask[:, :stop]
        return m.bool() if self.bool_mask else m

    def past(self, s: int) -> dict[str, torch.Tensor]:
        return {key: value[:, :, :s] for key, value in self.sent.items()}  # float64

    def y_variants(
        self, s: int, n: int, decode_only: bool, past: dict[str, torch.Tensor] | None = None
    ) -> dict[str, torch.Tensor]:
        """Each mistake's y (B, n, d) for the call on columns s..s+n, over `past` (default: what was sent)."""
        x = self.x[:, s : s + n].double()
        mask = self.mask[:, : s + n]
        past = self.past(s) if past is None else past
        layer = partial(rope_layer, x, self.w_qkv.double(), self.w_o.double(), self.h, past, base=self.base)
        positions = real_positions(mask)[:, -n:]  # (B, n)
        visible = visible_keys(mask, n)  # (B, 1, n, S)
        causal = torch.ones(n, s + n, dtype=torch.bool).tril(s)[None, None]  # (1, 1, n, S)
        out = {(MASK_ONLY_AT_PREFILL if decode_only else PADDING_ATTENDED): layer(positions, causal).y}
        if s > 0:  # within one call a row's positions all shift alike, which RoPE cannot see
            out[POSITIONS_WITH_PADDING] = layer(torch.arange(s, s + n), visible).y
        if n > 1:  # one query in the last column sees every key anyway
            out[NOT_CAUSAL] = layer(positions, mask.bool()[:, None, None, :].expand(-1, 1, n, -1)).y
        for mistake, rotate in wrong_rotations(self.base):
            if mistake in (BASE_IGNORED, INTERLEAVED):
                out[mistake] = layer(positions, visible, rotate=rotate).y
        return out


def _real_rows(t: torch.Tensor, real: torch.Tensor) -> torch.Tensor:
    return t[real]  # (N_real, d): the rows at real positions only


def _one_call(
    session: SubmissionLink,
    report: CheckReport,
    batch: _Batch,
    s: int,
    n: int,
    first_cache: str,
    base_as: str,
    decode_only: bool,
    cache_ev: Evidence,
) -> Comparison:
    """Call on columns s..s+n over the cache the grader built; returns y's comparison at real positions."""
    what = f"call on columns {s}..{s + n - 1}"
    x = batch.x[:, s : s + n]
    mask = batch.mask_until(s + n)
    cache: Any = (
        {k: v.float() for k, v in batch.past(s).items()}
        if s > 0
        else {"none": None, "empty": {}}.get(first_cache)
    )
    args: list[Any] = [x, batch.w_qkv, batch.w_o, batch.h, mask]
    kwargs: dict[str, Any] = {}
    if base_as == "positional":
        args += [cache, batch.base]
    else:
        if not (s == 0 and first_cache == "omit"):
            args.append(cache)
        if base_as == "keyword":
            kwargs["base"] = batch.base
    with submission_context(f"{what}: x {tuple(x.shape)}, attention_mask {tuple(mask.shape)} {mask.dtype}"):
        y, got_cache = call_layer(session.call(ENTRY_POINT, *args, **kwargs), what)
    B, d = x.shape[0], batch.d
    if y.shape != (B, n, d):
        raise Mismatch(f"{what}: y has shape {tuple(y.shape)}, expected {(B, n, d)}")
    if y.is_floating_point() and not torch.isfinite(y).all():
        report.diagnose(NAN_IN_PADDING)
        raise Mismatch(f"{what}: y holds NaN or inf. Likely cause: {NAN_IN_PADDING}")
    real = batch.mask[:, s : s + n].bool()  # (B, n)
    slots = batch.mask[:, : s + n].bool()  # (B, S): the cache slots that must be right
    S = s + n
    for key, want in (("k", batch.k), ("v", batch.v)):
        got = cache_tensor(got_cache, key, what)
        shape = (B, batch.h, S, d // batch.h)
        if got.shape != shape:
            raise Mismatch(
                f"{what}: cache[{key!r}] has shape {tuple(got.shape)}, expected {shape} (every slot)"
            )
        real_slots = got.transpose(1, 2)[slots]  # (N_real, h, hd)
        cache_ev.add(
            compare(
                real_slots,
                want[:, :, :S].transpose(1, 2)[slots].float(),
                f"{what}, cache[{key!r}] at real slots",
            )
        )

    def variants() -> list[Variant]:
        return [((m,), _real_rows(v, real)) for m, v in batch.y_variants(s, n, decode_only).items()]

    return compare(
        _real_rows(y, real),
        _real_rows(batch.y[:, s : s + n], real).float(),
        f"{what}, y at real positions",
        variants,
    )


def _decode_test(
    session: SubmissionLink,
    report: CheckReport,
    batch: _Batch,
    chunks: Sequence[int],
    first_cache: str = "omit",
    base_as: str = "keyword",
) -> Callable[[], None]:
    def body() -> None:
        y_ev, cache_ev = Evidence(), Evidence()
        schedule = [*chunks, *([1] * batch.steps)]
        s = 0
        prefill_ok = True
        for i, n in enumerate(schedule):
            decode_only = i >= len(chunks) and prefill_ok
            try:
                result = _one_call(session, report, batch, s, n, first_cache, base_as, decode_only, cache_ev)
            except Mismatch:
                if not (y_ev.failed or cache_ev.failed):
                    raise
                break
            if i < len(chunks):
                prefill_ok = prefill_ok and result.ok
            y_ev.add(result)
            s += n
        y_ev.conclude(report)
        cache_ev.conclude(report)

    return body


def _changed_cache_test(session: SubmissionLink, report: CheckReport, batch: _Batch) -> Callable[[], None]:
    P = batch.prompt
    changed = {key: value.clone() for key, value in batch.past(P).items()}
    row = P - 1  # the last prompt column is real in every row
    hd = batch.d // batch.h
    B = len(batch.real)
    changed["k"][:, :, row] = randn(batch.gen, B, batch.h, hd).double()
    changed["v"][:, :, row] = randn(batch.gen, B, batch.h, hd).double() * 3
    mask = batch.mask[:, : P + 1]
    x = batch.x[:, P : P + 1]
    want = rope_layer(
        x.double(),
        batch.w_qkv.double(),
        batch.w_o.double(),
        batch.h,
        changed,
        real_positions(mask)[:, -1:],
        visible_keys(mask, 1),
        batch.base,
    ).y.float()

    def body() -> None:
        args = (batch.w_qkv, batch.w_o, batch.h)
        with submission_context(f"a {P}-column prompt"):
            session.call(ENTRY_POINT, batch.x[:, :P], *args, batch.mask_until(P), None, batch.base)
        cache = {key: value.float() for key, value in changed.items()}
        with submission_context("one decode step on the grader's cache"):
            y, _ = call_layer(
                session.call(ENTRY_POINT, x, *args, batch.mask_until(P + 1), cache, batch.base), "the step"
            )
        if close(y, batch.y[:, P : P + 1].float()):
            report.diagnose(GLOBAL_STATE)
            raise Mismatch(
                f"after the grader changed column {row} of cache['k'] and cache['v'], y was unchanged. "
                f"Likely cause: {GLOBAL_STATE}"
            )
        result = compare(y, want, "y over the changed cache")
        if not result.ok:
            raise Mismatch(result.message)

    return body


def _prompt_lengths(rng: random.Random, B: int, longest: int) -> list[int]:
    """B real lengths, one row unpadded and one with a single real token when B > 2."""
    lengths = [longest] + [rng.randrange(2, longest) for _ in range(B - 1)]
    if B > 2:
        lengths[2] = 1
    rng.shuffle(lengths)
    return lengths


def run(session: SubmissionLink, seed: int | None = None) -> CheckReport:
    gen = make_generator(seed)
    rng = random.Random(int(torch.randint(0, 2**31, (1,), generator=gen)))
    report = CheckReport()

    real = _prompt_lengths(rng, 3, rng.randrange(6, 9))
    batch = _Batch(gen, real, 6, 32, 4, DEFAULT_BASE, bool_mask=False)
    run_test(
        report,
        f"prompts of {', '.join(map(str, real))} real tokens, padded on the left, prefill, 6 decode steps: "
        "each row matches its own unpadded run (int64 mask, default base, B=3 d=32 h=4)",
        _decode_test(session, report, batch, [batch.prompt], base_as="omit"),
    )
    base = rng.choice(BASES)
    real = _prompt_lengths(rng, 4, rng.randrange(7, 10))
    batch = _Batch(gen, real, 4, 30, 3, base, bool_mask=True)
    first = rng.randrange(2, 4)  # the first chunk holds only padding in some rows
    chunks = [first, batch.prompt - first]
    run_test(
        report,
        f"chunked prefill (columns in chunks of {chunks[0]} and {chunks[1]}, from cache={{}}) then 4 decode "
        f"steps, bool mask, base={base:g}, B=4 d=30 h=3",
        _decode_test(session, report, batch, chunks, first_cache="empty"),
    )
    base = rng.choice(BASES)
    real = [rng.randrange(2, 6)]
    batch = _Batch(gen, real, 4, 48, 3, base, bool_mask=False, extra_pad=3)
    run_test(
        report,
        f"a single prompt of {real[0]} tokens after 3 padding columns, cache=None and base={base:g} passed "
        "by position, B=1 d=48 h=3",
        _decode_test(session, report, batch, [batch.prompt], first_cache="none", base_as="positional"),
    )
    batch = _Batch(gen, [5, 5], 3, 32, 2, DEFAULT_BASE, bool_mask=True)
    run_test(
        report,
        "no padding at all: the same as rope_attention, B=2 d=32 h=2",
        _decode_test(session, report, batch, [5], first_cache="none", base_as="omit"),
    )
    batch = _Batch(gen, [6, 3, 4], 1, 32, 4, rng.choice(BASES), bool_mask=False)
    run_test(
        report,
        "reads the past from the cache passed in: a changed cached key and value change the output, B=3",
        _changed_cache_test(session, report, batch),
    )
    base = rng.choice(BASES)
    figure_test(
        report,
        left_padded_decoding_cost.NAME,
        lambda: left_padded_decoding_cost.figure(gen, rng, base, cost.measurer(session)),
    )
    return report

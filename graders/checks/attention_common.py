"""Helpers shared by the three attention batteries (fix-causal-attention, decode-step, gqa-attention).

- random inputs: a fresh seed per run unless a test pins one;
- `attention_variant`: the attention core with each classic mistake as a switch, so a
  battery can say *which* mistake a wrong output matches;
- `compare` / `expect_match`: compare with the reference and, on a mismatch, name the
  known-wrong variant the output matches (in the test's message and in report.diagnosis);
  `Evidence` does the same over several calls, naming only what every mismatch agrees on;
- `decode_tensor`: a submission's value as a tensor, or a failed test saying what it was;
- `submission_context`: turn the submission's exception into a failed test with a hint.

References are computed in float64 from the very float32 inputs the submission gets,
so the only tolerance spent is the submission's own rounding.
"""

from __future__ import annotations

import math
import secrets
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal, NoReturn

import numpy as np
import torch
import torch.nn.functional as F

from graders.checks.report import CheckReport, Mismatch, close, explain_difference
from graders.reference.attention import causal_mask
from graders.sandbox.protocol import Handle, SubmissionError

# --- interviewer sentences shared by the batteries -------------------------------------

MASK_AFTER_SOFTMAX = (
    "the mask is applied after the softmax: fill the future scores with -inf before the softmax, "
    "so each row is normalised over the keys it may see"
)
NO_MASK = "there is no causal mask: position i also sees the tokens after it"
SOFTMAX_OVER_QUERIES = "the softmax runs over the queries (dim=-2): normalise over the keys, dim=-1"
SCALE_SQRT_D = "scores are divided by sqrt(d), not sqrt(head size): use hd = d // n_heads"
SCALE_D = "scores are divided by d, not sqrt(head size)"
SCALE_HD = "scores are divided by the head size, not by its square root"
NO_SCALE = "scores are not scaled: divide q @ k^T by sqrt(head size)"
MERGE_NO_TRANSPOSE = (
    "the heads are merged without transposing back to (B, T, n_heads, hd): "
    "y.transpose(1, 2).reshape(B, T, d), not y.reshape(B, T, d)"
)
SPLIT_NO_TRANSPOSE = (
    "the heads are split with view(B, n_heads, T, hd): view as (B, T, n_heads, hd), then transpose(1, 2)"
)
NOT_FINITE = (
    "NaN in the output: a row of scores that is entirely -inf (every key masked), "
    "or -inf written in after the softmax, turns into NaN"
)

Scale = Literal["sqrt_hd", "sqrt_d", "d", "hd", "none"]
MaskKind = Literal["causal", "top_left", "none", "hide_all"]

SCALE_MISTAKES: dict[Scale, str] = {
    "sqrt_d": SCALE_SQRT_D,
    "d": SCALE_D,
    "hd": SCALE_HD,
    "none": NO_SCALE,
}

# --- random inputs ----------------------------------------------------------------------


def make_generator(seed: int | None) -> torch.Generator:
    """A CPU generator; a fresh random seed unless one is given (tests pin it)."""
    gen = torch.Generator()
    gen.manual_seed(secrets.randbits(63) if seed is None else seed)
    return gen


def randn(gen: torch.Generator, *shape: int, scale: float = 1.0) -> torch.Tensor:
    return torch.randn(*shape, generator=gen) * scale


def random_attention_weights(gen: torch.Generator, d: int) -> tuple[torch.Tensor, torch.Tensor]:
    """w_qkv (d, 3d) and w_o (d, d), scaled so scores and outputs stay around unit size."""
    return randn(gen, d, 3 * d, scale=d**-0.5), randn(gen, d, d, scale=d**-0.5)


# --- the attention core with its classic mistakes ---------------------------------------


def scale_factor(kind: Scale, d: int, hd: int) -> float:
    """What the scores are multiplied by."""
    return {
        "sqrt_hd": 1 / math.sqrt(hd),
        "sqrt_d": 1 / math.sqrt(d),
        "d": 1 / d,
        "hd": 1 / hd,
        "none": 1.0,
    }[kind]


def visible_keys(kind: MaskKind, T: int, S: int) -> torch.Tensor:
    """(T, S) bool, True where a query may see a key."""
    if kind == "causal":
        return causal_mask(T, S)  # bottom-right: query i at position S - T + i
    if kind == "top_left":
        return torch.ones(T, S, dtype=torch.bool).tril(0)  # query i sees keys 0..i only
    if kind == "none":
        return torch.ones(T, S, dtype=torch.bool)
    return torch.zeros(T, S, dtype=torch.bool)  # hide_all


def attention_variant(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    scale: float,
    mask: MaskKind = "causal",
    mask_after_softmax: bool = False,
    softmax_dim: int = -1,
) -> torch.Tensor:
    """q (B, H, T, hd), k and v (B, H, S, hd) -> (B, H, T, hd), with the chosen mistakes.

    The defaults (with scale = 1/sqrt(hd)) are correct attention. Hidden scores are
    filled with the dtype's most negative finite number rather than -inf, so a mask
    that hides every key gives the uniform average a finite fill would give.
    """
    T, S = q.shape[-2], k.shape[-2]
    scores = q @ k.transpose(-2, -1) * scale  # (B, H, T, S)
    visible = visible_keys(mask, T, S)
    if mask_after_softmax:
        weights = F.softmax(scores, dim=softmax_dim).masked_fill(~visible, 0.0)
    else:
        hidden_fill = torch.finfo(scores.dtype).min
        weights = F.softmax(scores.masked_fill(~visible, hidden_fill), dim=softmax_dim)
    return weights @ v  # (B, H, T, hd)


# --- decoding and comparing -------------------------------------------------------------


def describe(value: Any) -> str:
    """A submission's value in a message: its type, or what a Handle stands for."""
    return "an object of your own (not plain data)" if isinstance(value, Handle) else type(value).__name__


def decode_tensor(value: Any, what: str) -> torch.Tensor:
    """A tensor (or NumPy array) from the submission; Mismatch for anything else."""
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "biuf":
            raise Mismatch(f"{what} is a NumPy array of dtype {value.dtype}, expected a float tensor")
        value = torch.from_numpy(np.array(value))  # a writable copy: torch warns on read-only arrays
    if not isinstance(value, torch.Tensor):
        raise Mismatch(f"{what} should be a tensor, got {describe(value)}")
    return value


Variant = tuple[Sequence[str], torch.Tensor]  # (the mistakes, in interviewer words; the output)


@dataclass
class Comparison:
    """A submission's output against the reference; `matches` lists every variant it equals."""

    tensor: torch.Tensor
    ok: bool
    message: str = ""
    matches: list[Sequence[str]] = field(default_factory=list)


def compare(
    got: Any,
    want: torch.Tensor,
    what: str,
    variants: Callable[[], Sequence[Variant]] = list,
    *,
    not_finite: str | None = NOT_FINITE,
) -> Comparison:
    """Decode `got` and compare it with `want`; variants are computed only on a mismatch.

    Raises Mismatch for something that is not a float tensor at all.
    """
    tensor = decode_tensor(got, what)
    if tensor.is_complex() or tensor.dtype == torch.bool:
        raise Mismatch(f"{what} has dtype {tensor.dtype}, expected a float tensor")
    if close(tensor, want):
        return Comparison(tensor, True)
    result = Comparison(tensor, False, explain_difference(tensor, want, what))
    if not torch.isfinite(tensor).all():
        result.matches = [(not_finite,)] if not_finite and tensor.shape == want.shape else []
    else:  # a variant may have another shape (a cache in the wrong layout)
        result.matches = [mistakes for mistakes, wrong in variants() if close(tensor, wrong)]
    return result


def fail(
    report: CheckReport, comparison: Comparison, mistakes: Sequence[str] = (), hint: str = ""
) -> NoReturn:
    """Raise the comparison's Mismatch, naming `mistakes` (also added to report.diagnosis)."""
    message = comparison.message
    for sentence in mistakes:
        report.diagnose(sentence)
    if mistakes:
        message += ". Likely cause: " + "; and ".join(mistakes)
    elif hint:
        message += f" ({hint})"
    raise Mismatch(message)


def expect_match(
    report: CheckReport,
    got: Any,
    want: torch.Tensor,
    what: str,
    variants: Callable[[], Sequence[Variant]] = list,
    *,
    not_finite: str | None = NOT_FINITE,
) -> torch.Tensor:
    """Return `got` decoded when it matches `want`; otherwise raise Mismatch, naming the first
    known-wrong variant it matches (list variants fewest mistakes first)."""
    result = compare(got, want, what, variants, not_finite=not_finite)
    if not result.ok:
        fail(report, result, result.matches[0] if result.matches else ())
    return result.tensor


class Evidence:
    """Mismatches over several calls (the steps of a decode): name only a mistake that every
    mismatching call agrees on, since one step alone can fit two mistakes."""

    def __init__(self) -> None:
        self.first: Comparison | None = None
        self.candidates: list[Sequence[str]] = []

    def add(self, comparison: Comparison) -> None:
        if comparison.ok:
            return
        if self.first is None:
            self.first, self.candidates = comparison, list(comparison.matches)
        else:
            self.candidates = [c for c in self.candidates if c in comparison.matches]

    @property
    def failed(self) -> bool:
        return self.first is not None

    def conclude(self, report: CheckReport, hint: str = "") -> None:
        """Raise for the first mismatch, if any."""
        if self.first is not None:
            fail(report, self.first, self.candidates[0] if self.candidates else (), hint)


def raised(exc: SubmissionError, hint: str) -> Mismatch:
    """The failed test for the submission's exception, with a hint about what it was asked."""
    detail = f"{exc.type_name}: {exc.message}" if exc.message else exc.type_name
    return Mismatch(f"your code raised {detail} ({hint})")


@contextmanager
def submission_context(hint: str) -> Iterator[None]:
    """Fail the test with the submission's exception and a hint about what it was asked."""
    try:
        yield
    except SubmissionError as exc:
        raise raised(exc, hint) from None

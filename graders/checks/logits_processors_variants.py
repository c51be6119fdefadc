"""The logits-processors battery's wrong processors: each named mistake as code, and a diagnosis.

`wrong(mistake, ...)` is process_logits with one step done wrong; a wrong answer is named after
the mistake that reproduces it (and differs from the rule) on that test's inputs.
"""

from __future__ import annotations

import torch

from graders.reference.logits_processors import banned_ngram_tokens

REP_SIGN_IGNORED = (
    "the repetition penalty divides every seen logit: a negative logit must be multiplied by it, "
    "or the penalty would raise it"
)
REP_SIGNS_SWAPPED = (
    "the repetition penalty's signs are swapped: divide a positive logit, multiply a negative one"
)
REP_PER_OCCURRENCE = "the repetition penalty is applied once per occurrence: it applies once per id"
REP_IGNORED = "the repetition_penalty argument is ignored"
PRESENCE_TIMES_COUNT = (
    "the presence penalty is multiplied by the count: it applies once to a token that occurs"
)
FREQUENCY_ONCE = "the frequency penalty is applied once per id: it is multiplied by the count"
PENALTIES_SWAPPED = "presence and frequency penalties are swapped"
PENALTIES_BEFORE_REP = (
    "the presence and frequency penalties come before the repetition penalty: the repetition penalty is first"
)
NGRAM_PREFIX_N = (
    "the n-gram ban matches the last n tokens: a banned token completes an n-gram, so the prefix is "
    "the last n - 1"
)
NGRAM_N1 = "with n = 1 the prefix is empty and every token in the row is banned (row[-0:] is the whole row)"
NGRAM_SHORT_ROW = "a row shorter than n has no n-gram to ban: it must not raise"
NGRAM_IGNORED = "the no_repeat_ngram_size argument is ignored"
TEMPERATURE_MULTIPLIES = "the logits are multiplied by the temperature instead of divided"
TEMPERATURE_FIRST = "temperature is applied before the penalties: it comes after them, just before min-p"
MIN_P_BEFORE_TEMPERATURE = "min-p is computed before temperature: p is the softmax of the tempered logits"
MIN_P_ABSOLUTE = "min-p compares p with min_p itself: the threshold is min_p * max(p)"
MASK_NOT_INF = "filtered tokens get a finite value: they get -inf"
MUTATES_INPUT = "the input logits are changed in place: work on a copy"
BAD_ARGUMENTS = (
    "bad arguments must raise ValueError: repetition_penalty <= 0, temperature <= 0, min_p outside [0, 1], "
    "a negative no_repeat_ngram_size"
)
KNOWN_MISTAKES = (
    REP_SIGN_IGNORED,
    REP_SIGNS_SWAPPED,
    REP_PER_OCCURRENCE,
    REP_IGNORED,
    PRESENCE_TIMES_COUNT,
    FREQUENCY_ONCE,
    PENALTIES_SWAPPED,
    PENALTIES_BEFORE_REP,
    NGRAM_PREFIX_N,
    NGRAM_N1,
    NGRAM_SHORT_ROW,
    NGRAM_IGNORED,
    TEMPERATURE_MULTIPLIES,
    TEMPERATURE_FIRST,
    MIN_P_BEFORE_TEMPERATURE,
    MIN_P_ABSOLUTE,
    MASK_NOT_INF,
    MUTATES_INPUT,
    BAD_ARGUMENTS,
)
# The mistakes a wrong answer can be compared with (the others show as raised errors or changed inputs).
COMPARED = tuple(m for m in KNOWN_MISTAKES if m not in (NGRAM_SHORT_ROW, MUTATES_INPUT, BAD_ARGUMENTS))


def _banned(row: list[int], n: int, mistake: str | None) -> list[int]:
    if mistake == NGRAM_IGNORED:
        return []
    if mistake == NGRAM_PREFIX_N and n > 0:
        if len(row) < n:
            return []
        prefix = tuple(row[len(row) - n :])
        return sorted({row[i + n] for i in range(len(row) - n) if tuple(row[i : i + n]) == prefix})
    if mistake == NGRAM_N1 and n == 1:
        return []  # prefix = row[-0:] is the whole row: no 0-gram equals it
    return banned_ngram_tokens(row, n)


def wrong(
    mistake: str | None,
    logits: torch.Tensor,
    tokens: list[list[int]],
    rp: float = 1.0,
    pp: float = 0.0,
    fp: float = 0.0,
    n: int = 0,
    t: float = 1.0,
    mp: float = 0.0,
) -> torch.Tensor:
    """process_logits with `mistake` (None: the rule), in float64."""
    B, V = logits.shape
    out = logits.double().clone()
    if mistake == TEMPERATURE_FIRST:
        out = out / t
    if mistake == PENALTIES_SWAPPED:
        pp, fp = fp, pp
    fill = -1e9 if mistake == MASK_NOT_INF else float("-inf")
    for b, row in enumerate(tokens):
        counts = torch.bincount(torch.tensor(row, dtype=torch.long), minlength=V).double()
        seen = (counts > 0).double()
        x = out[b]
        presence = pp * (counts if mistake == PRESENCE_TIMES_COUNT else seen)
        frequency = fp * (seen if mistake == FREQUENCY_ONCE else counts)
        if mistake == PENALTIES_BEFORE_REP:
            x = x - presence - frequency
        if mistake != REP_IGNORED:
            times = counts if mistake == REP_PER_OCCURRENCE else seen
            factor = rp**times
            if mistake == REP_SIGN_IGNORED:
                x = x / factor
            elif mistake == REP_SIGNS_SWAPPED:
                x = torch.where(x > 0, x * factor, x / factor)
            else:
                x = torch.where(x > 0, x / factor, x * factor)
        if mistake != PENALTIES_BEFORE_REP:
            x = x - presence - frequency
        banned = _banned(row, n, mistake)
        if banned:
            x[banned] = fill
        out[b] = x
    if mistake == TEMPERATURE_MULTIPLIES:
        out = out * t
    elif mistake != TEMPERATURE_FIRST:
        before = out
        out = out / t
    if mp > 0:
        base = before if mistake == MIN_P_BEFORE_TEMPERATURE else out
        p = torch.softmax(base, dim=-1)
        bound = mp if mistake == MIN_P_ABSOLUTE else mp * p.max(dim=-1, keepdim=True).values
        out = out.masked_fill(p < bound, fill)
    return out

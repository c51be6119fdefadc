"""Logits processors, applied in the order the logits-processors challenge states.

Per row b of logits (B, V), with tokens[b] the row's tokens so far:
  1. repetition penalty (CTRL, Keskar et al. 2019, arXiv:1909.05858; Hugging Face's
     RepetitionPenaltyLogitsProcessor): every id seen at least once has a positive logit divided
     by the penalty and a negative one multiplied by it, once per id however often it occurs;
  2. presence and frequency penalties (the OpenAI API, vLLM):
     logit -= presence * (count > 0) + frequency * count;
  3. no-repeat n-gram (Hugging Face's NoRepeatNGramLogitsProcessor): with n > 0 and a row of at
     least n - 1 tokens, a token that would complete an n-gram already in the row after the row's
     last n - 1 tokens gets -inf (n = 1 bans every token seen);
  4. temperature: logits / temperature;
  5. min-p (Nguyen et al. 2024, arXiv:2407.01082): with p = softmax of the logits so far, tokens
     with p < min_p * max(p) get -inf.
The input is never changed.
"""

from __future__ import annotations

import torch


def check_arguments(
    repetition_penalty: float, no_repeat_ngram_size: int, temperature: float, min_p: float
) -> None:
    if repetition_penalty <= 0:
        raise ValueError(f"repetition_penalty={repetition_penalty} must be positive")
    if no_repeat_ngram_size < 0:
        raise ValueError(f"no_repeat_ngram_size={no_repeat_ngram_size} is negative (0 turns it off)")
    if temperature <= 0:
        raise ValueError(f"temperature={temperature} must be positive")
    if not 0 <= min_p <= 1:
        raise ValueError(f"min_p={min_p} is outside [0, 1]")


def banned_ngram_tokens(row: list[int], n: int) -> list[int]:
    """The tokens that would complete an n-gram of `row` after its last n - 1 tokens."""
    if n <= 0 or len(row) < n - 1:
        return []
    prefix = tuple(row[len(row) - (n - 1) :])  # empty for n = 1 (row[-0:] would be the whole row)
    return sorted({row[i + n - 1] for i in range(len(row) - n + 1) if tuple(row[i : i + n - 1]) == prefix})


def process_logits(
    logits: torch.Tensor,
    tokens: list[list[int]],
    repetition_penalty: float = 1.0,
    presence_penalty: float = 0.0,
    frequency_penalty: float = 0.0,
    no_repeat_ngram_size: int = 0,
    temperature: float = 1.0,
    min_p: float = 0.0,
) -> torch.Tensor:
    """logits (B, V), tokens B lists of ids in [0, V) -> new logits (B, V)."""
    check_arguments(repetition_penalty, no_repeat_ngram_size, temperature, min_p)
    B, V = logits.shape
    out = logits.clone()  # (B, V): the input stays as it was
    for b, row in enumerate(tokens):
        counts = torch.bincount(torch.tensor(row, dtype=torch.long), minlength=V).to(out.dtype)  # (V,)
        seen = counts > 0  # (V,)
        x = out[b]
        penalised = torch.where(x > 0, x / repetition_penalty, x * repetition_penalty)
        x = torch.where(seen, penalised, x)
        x = x - (presence_penalty * seen.to(out.dtype) + frequency_penalty * counts)
        banned = banned_ngram_tokens(row, no_repeat_ngram_size)
        if banned:
            x[banned] = float("-inf")
        out[b] = x
    out = out / temperature
    if min_p > 0:
        p = torch.softmax(out, dim=-1)  # (B, V)
        out = out.masked_fill(p < min_p * p.max(dim=-1, keepdim=True).values, float("-inf"))
    return out

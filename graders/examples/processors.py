"""Run cases of logits-processors: one call of process_logits on seeded logits and rows.

-inf cannot be compared with a tolerance (-inf - -inf is NaN), so each case shows two outputs:
where the logits are -inf (exact), and the logits with the reference's -inf places set to 0.
"""

from __future__ import annotations

from typing import Any

import torch

from graders.checks.attention_common import submission_context
from graders.examples.spec import SEED, Compared, Example, Param, RunSpec, generator
from graders.reference.logits_processors import process_logits
from graders.sandbox.protocol import SubmissionLink

KNOBS = (
    "repetition_penalty",
    "presence_penalty",
    "frequency_penalty",
    "no_repeat_ngram_size",
    "temperature",
    "min_p",
)


def _processors_case(session: SubmissionLink, values: dict[str, Any]) -> list[Compared]:
    gen = generator(values["seed"])
    B, V, length = values["batch"], values["vocab"], values["row_length"]
    logits = torch.randn(B, V, generator=gen) * 2.0
    pool = max(2, V // 2)  # ids repeat within a row
    tokens = torch.randint(0, pool, (B, length), generator=gen).tolist()
    knobs = {k: values[k] for k in KNOBS}
    said = ", ".join(f"{k}={v}" for k, v in knobs.items())
    with submission_context(
        f"calling process_logits(logits, tokens, {said}) with logits {tuple(logits.shape)}"
    ):
        got = session.call("process_logits", logits, tokens, **knobs)
    want = process_logits(logits.double(), tokens, **knobs).float()
    mask = torch.isneginf(want)
    out = [Compared(f"where the logits are -inf, tokens {tokens}", got, want)]
    if isinstance(got, torch.Tensor) and got.shape == want.shape:
        out = [
            Compared(
                f"where the logits are -inf (B, V), tokens {tokens}", torch.isneginf(got), mask, exact=True
            ),
            Compared(
                f"process_logits(logits, tokens, {said}), -inf shown as 0 (B, V)",
                got.float().masked_fill(mask, 0.0),
                want.masked_fill(mask, 0.0),
            ),
        ]
    return out


LOGITS_PROCESSORS = RunSpec(
    slug="logits-processors",
    entry_point="process_logits",
    summary=(
        "Random logits (batch, V) and rows of tokens drawn from half the vocabulary (so ids repeat);"
        " calls process_logits(logits, tokens, ...) with the knobs."
    ),
    params=(
        Param("batch", "Batch", 2, 1, 8),
        Param("vocab", "Vocabulary size V", 8, 2, 64),
        Param("row_length", "Tokens per row", 6, 0, 32),
        Param("repetition_penalty", "Repetition penalty", 1.0, 0.01, 10.0, "1.0 changes nothing"),
        Param("presence_penalty", "Presence penalty", 0.0, -2.0, 2.0),
        Param("frequency_penalty", "Frequency penalty", 0.0, -2.0, 2.0),
        Param("no_repeat_ngram_size", "No-repeat n-gram size", 0, 0, 8, "0 turns it off"),
        Param("temperature", "Temperature", 1.0, 0.01, 5.0),
        Param("min_p", "min_p", 0.0, 0.0, 1.0, "0 keeps every token"),
        SEED,
    ),
    examples=(
        Example(
            "repetition penalty",
            {
                "batch": 2,
                "vocab": 8,
                "row_length": 6,
                "repetition_penalty": 1.5,
                "presence_penalty": 0.0,
                "frequency_penalty": 0.0,
                "no_repeat_ngram_size": 0,
                "temperature": 1.0,
                "min_p": 0.0,
                "seed": 0,
            },
        ),
        Example(
            "presence, frequency and a 2-gram ban",
            {
                "batch": 2,
                "vocab": 6,
                "row_length": 8,
                "repetition_penalty": 1.0,
                "presence_penalty": 0.5,
                "frequency_penalty": 0.25,
                "no_repeat_ngram_size": 2,
                "temperature": 1.0,
                "min_p": 0.0,
                "seed": 1,
            },
        ),
        Example(
            "everything, min-p after temperature",
            {
                "batch": 3,
                "vocab": 10,
                "row_length": 6,
                "repetition_penalty": 1.3,
                "presence_penalty": 0.5,
                "frequency_penalty": 0.25,
                "no_repeat_ngram_size": 3,
                "temperature": 0.7,
                "min_p": 0.1,
                "seed": 2,
            },
        ),
    ),
    case=_processors_case,
)

__all__ = ["LOGITS_PROCESSORS"]

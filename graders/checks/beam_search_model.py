"""The grader's model for beam-search: log-probs that depend on each row's whole history.

`HistoryModel` is a toy language model with the contract's three calls. Its log-probs for a row
are a function of the model's seed and the row's whole history (prompt and every token stepped
into it since), so a cache that is not reordered, or reordered wrong, hands some row another
beam's history and changes the answer. Each log-prob is -k/8 for a whole k in 1..LEVELS: exact
in float32, so every sum is exact whatever order a search adds in, and equal sums (ties) are
common, which makes the contract's tie rules decide real cases.

It keeps the record the battery judges the calls by, on the grader's side of the sandbox (the
submission gets it as a `Remote`, graders/sandbox/remote.py): the prefill calls, the rows of
every step (their histories after the prompt, as given), and every call it refused and why
(wrong types, shapes, ranges, a cache it never gave out), even when the submission catches the
error. Caches are immutable snapshots: step and reorder return new ones.
"""

from __future__ import annotations

import functools
import hashlib
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from graders.sandbox.remote import Remote

METHODS = ("prefill", "step", "reorder")
LEVELS = 24  # log-probs -1/8 .. -24/8
EOS_LEVELS = 12  # eos is drawn from the likelier half, so hypotheses finish often


@dataclass(frozen=True, eq=False)
class Cache:
    """The model's cache: one history (prompt + generated tokens) per row."""

    owner: HistoryModel
    rows: tuple[tuple[int, ...], ...]


@dataclass
class HistoryModel:
    seed: int
    vocab: int
    eos_id: int | None = None
    wrap: bool = False  # caches leave as Remote references (the submission's model) or as objects
    prompt_length: int = 0  # set by prefill: histories are recorded after the prompt
    prefills: int = 0
    steps: list[list[tuple[int, ...]]] = field(default_factory=list)  # per step: each row's generated tokens
    reorders: int = 0
    refusals: list[str] = field(default_factory=list)

    # -- the log-probs ------------------------------------------------------------------------

    def row(self, history: tuple[int, ...]) -> tuple[float, ...]:
        """(V,) log-probs after `history`, a function of the seed and the whole history."""
        return _row(self.seed, self.vocab, self.eos_id, history)

    def _log_probs(self, rows: Sequence[tuple[int, ...]]) -> torch.Tensor:
        return torch.tensor([self.row(h) for h in rows], dtype=torch.float32)  # (N, V)

    # -- the contract's calls -----------------------------------------------------------------

    def prefill(self, prompt: Any) -> tuple[torch.Tensor, Any]:
        tokens = self._prompt(prompt)
        self.prefills += 1
        self.prompt_length = len(tokens)
        cache = Cache(self, (tokens,))
        return self._log_probs(cache.rows)[0], self._out(cache)  # (V,)

    def step(self, tokens: Any, cache: Any) -> tuple[torch.Tensor, Any]:
        held = self._cache(cache, "step")
        new = self._ids(tokens, "step's tokens", len(held.rows), self.vocab, f"the cache's {len(held.rows)}")
        rows = tuple(h + (t,) for h, t in zip(held.rows, new, strict=True))
        self.steps.append([h[self.prompt_length :] for h in rows])
        return self._log_probs(rows), self._out(Cache(self, rows))  # (N, V)

    def reorder(self, cache: Any, rows: Any) -> Any:
        held = self._cache(cache, "reorder")
        picked = self._ids(rows, "reorder's rows", None, len(held.rows), "")
        if not picked:
            self._refuse("reorder's rows are empty: at least one row must stay")
        self.reorders += 1
        return self._out(Cache(self, tuple(held.rows[i] for i in picked)))

    # -- what it accepts ----------------------------------------------------------------------

    def _out(self, cache: Cache) -> Any:
        return Remote(cache) if self.wrap else cache

    def _refuse(self, message: str, kind: type[Exception] = ValueError) -> None:
        """Keep the refusal on the record, then raise it (a builtin type the submission sees as is)."""
        self.refusals.append(message)
        raise kind(message)

    def _cache(self, cache: Any, call: str) -> Cache:
        if not isinstance(cache, Cache) or cache.owner is not self:
            self._refuse(
                f"{call} was given {type(cache).__name__}, not a cache this model returned", TypeError
            )
        return cache  # type: ignore[no-any-return]

    def _prompt(self, prompt: Any) -> tuple[int, ...]:
        if isinstance(prompt, torch.Tensor) and prompt.dim() == 1 and not prompt.is_floating_point():
            prompt = prompt.tolist()
        if not isinstance(prompt, list | tuple) or not prompt or not all(type(t) is int for t in prompt):
            self._refuse(
                f"prefill takes the prompt, a non-empty list of ints, got {_shown(prompt)}", TypeError
            )
        if any(not 0 <= t < self.vocab for t in prompt):
            self._refuse(f"prefill's prompt has a token outside 0..{self.vocab - 1}: {list(prompt)}")
        return tuple(prompt)

    def _ids(self, value: Any, what: str, length: int | None, bound: int, of: str) -> list[int]:
        """A LongTensor (n,) of ids in 0..bound-1 (n == length when given)."""
        if not isinstance(value, torch.Tensor) or value.dtype != torch.long or value.dim() != 1:
            shape = tuple(value.shape) if isinstance(value, torch.Tensor) else None
            kind = f"{value.dtype} tensor of shape {shape}" if shape is not None else type(value).__name__
            self._refuse(f"{what} must be a LongTensor (N,), got a {kind}", TypeError)
        ids: list[int] = value.tolist()
        if length is not None and len(ids) != length:
            self._refuse(f"{what} hold {len(ids)} ids for {of} rows: one token for each row of the cache")
        if any(not 0 <= i < bound for i in ids):
            self._refuse(f"{what} {ids} must lie in 0..{bound - 1}")
        return ids


# A verdict asks for the same rows many times: the reference's search, each named mistake's, each
# draw of a test's settings and the submission's own calls walk the same histories of one seed.
@functools.lru_cache(maxsize=1 << 16)
def _row(seed: int, vocab: int, eos_id: int | None, history: tuple[int, ...]) -> tuple[float, ...]:
    digest = hashlib.blake2b(repr((seed, history)).encode(), digest_size=8).digest()
    rng = random.Random(int.from_bytes(digest, "little"))
    ks = [rng.randint(1, LEVELS) for _ in range(vocab)]
    if eos_id is not None:
        ks[eos_id] = rng.randint(1, EOS_LEVELS)
    return tuple(-k / 8 for k in ks)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def submission_model(seed: int, vocab: int, eos_id: int | None) -> tuple[HistoryModel, Remote]:
    """The model a submission is handed (its caches leave as references) and the Remote of it."""
    model = HistoryModel(seed, vocab, eos_id, wrap=True)
    return model, Remote(model, METHODS)

"""kv-cache-buffer's scripts and their replay: the update and reorder calls a test draws, run on the
submission's cache, on graders.reference.kv_cache.KVCache and on the known-wrong variants, failing
at the first difference and naming the variant that agreed (graders/checks/kv_cache_buffer.py's
tests build the scripts).
"""

from __future__ import annotations

import random
import weakref
from dataclasses import dataclass
from typing import Any

import torch

from graders.checks.kv_cache_buffer_mistakes import (
    COPY,
    REORDER_DIM,
)
from graders.checks.report import CheckReport, Mismatch, close, explain_difference
from graders.reference.kv_cache import KVCache
from graders.sandbox.protocol import Handle, Keep, Pending, SubmissionError, SubmissionLink
from graders.wording import exception_text

ENTRY_POINT = "KVCache"  # the class the submission defines


@dataclass(frozen=True)
class Dims:
    n_layers: int
    batch: int
    n_heads: int
    max_len: int
    head_dim: int
    dtype: torch.dtype = torch.float32

    def args(self) -> tuple[int, int, int, int, int]:
        return self.n_layers, self.batch, self.n_heads, self.max_len, self.head_dim

    def kwargs(self) -> dict[str, Any]:
        """The optional arguments, passed only when they are not the defaults (dtype, device)."""
        return {} if self.dtype == torch.float32 else {"dtype": self.dtype, "device": "cpu"}

    def __str__(self) -> str:
        dims = f"L={self.n_layers} B={self.batch} H={self.n_heads} max_len={self.max_len} hd={self.head_dim}"
        return dims if self.dtype == torch.float32 else f"{dims} dtype={self.dtype}"


@dataclass(frozen=True)
class Update:
    layer: int
    k: torch.Tensor
    v: torch.Tensor
    start: int

    def __str__(self) -> str:
        return f"update(layer={self.layer}, k, v, start={self.start}) with n={self.k.shape[2]}"


@dataclass(frozen=True)
class Reorder:
    beam_idx: torch.Tensor

    def __str__(self) -> str:
        return f"reorder({self.beam_idx.tolist()})"


class Rng:
    """Fresh random tensors for each run."""

    def __init__(self, seed: int | None = None) -> None:
        self.py = random.Random(seed)
        self.torch = torch.Generator().manual_seed(self.py.randrange(2**62))

    def kv(self, dims: Dims, n: int, **override: int) -> tuple[torch.Tensor, torch.Tensor]:
        b = override.get("batch", dims.batch)
        h = override.get("n_heads", dims.n_heads)
        hd = override.get("head_dim", dims.head_dim)
        shape = (b, h, n, hd)
        return (
            torch.randn(shape, generator=self.torch).to(dims.dtype),
            torch.randn(shape, generator=self.torch).to(dims.dtype),
        )

    def update(self, dims: Dims, layer: int, start: int, n: int) -> Update:
        return Update(layer, *self.kv(dims, n), start)


def pair(value: Any, what: str) -> tuple[torch.Tensor, torch.Tensor]:
    if not isinstance(value, tuple | list) or len(value) != 2:
        kind = type(value).__name__
        raise Mismatch(f"{what} should return a pair (k_all, v_all) of tensors, got {kind}")
    for part, name in zip(value, ("k_all", "v_all"), strict=True):
        if not isinstance(part, torch.Tensor):
            raise Mismatch(
                f"{what}'s {name} should be a torch tensor (a view of the cache), got {type(part).__name__}"
            )
    return value[0], value[1]


def method(session: SubmissionLink, cache: Handle, name: str, *args: Any, keep: Keep = False) -> Any:
    return method_later(session, cache, name, *args, keep=keep).value()


def method_later(
    session: SubmissionLink, cache: Handle, name: str, *args: Any, keep: Keep = False
) -> Pending:
    """A method call queued (SubmissionLink.call_later): a script's calls never wait for an
    answer (the grader checks each against its own reference), so all of them go out in one
    round trip; `.value()` gives each answer, or raises what the call raised, in order."""
    try:
        return session.call_later(getattr(cache, name), *args, keep=keep)
    except AttributeError:
        raise Mismatch(f"KVCache has no method {name}: see the prompt for its signature") from None


_DEFINED: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()  # session -> has KVCache


def new_cache(session: SubmissionLink, dims: Dims) -> Handle:
    if session not in _DEFINED:  # asked once per session: each test builds a cache
        _DEFINED[session] = session.has(ENTRY_POINT)
    if not _DEFINED[session]:
        raise Mismatch("define class KVCache at the top level of your file")
    cache = session.call(ENTRY_POINT, *dims.args(), **dims.kwargs(), keep=True)
    if not isinstance(cache, Handle):  # pragma: no cover - keep=True always hands back a Handle
        raise Mismatch("KVCache(...) should build an object")
    return cache


def replay(
    report: CheckReport,
    session: SubmissionLink,
    dims: Dims,
    script: list[Update | Reorder],
    variants: list[tuple[str, type[KVCache]]],
) -> None:
    """Run the script on the submission, the reference and every variant; fail at the first difference."""
    cache = new_cache(session, dims)
    ref = KVCache(*dims.args(), **dims.kwargs())
    suspects = [(name, cls(*dims.args(), **dims.kwargs())) for name, cls in variants]
    held: list[tuple[Handle, Update, int]] = []  # each returned pair, still in the submission's process
    answers = [
        method_later(session, cache, "reorder", op.beam_idx)
        if isinstance(op, Reorder)
        else method_later(session, cache, "update", op.layer, op.k, op.v, op.start, keep="both")
        for op in script
    ]
    for step, op in enumerate(script):
        if isinstance(op, Reorder):
            held = []  # reorder may rebind the buffers: earlier views need not see what follows
            ref.reorder(op.beam_idx)
            survivors = []
            for name, s in suspects:
                try:
                    s.reorder(op.beam_idx)
                except (ValueError, IndexError, RuntimeError):
                    continue
                survivors.append((name, s))
            suspects = survivors
            answers[step].value()
            continue
        want_k, want_v = ref.update(op.layer, op.k, op.v, op.start)
        theirs: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}  # by position: names repeat
        for i, (_, s) in enumerate(suspects):
            try:
                theirs[i] = s.update(op.layer, op.k, op.v, op.start)
            except (ValueError, IndexError, RuntimeError):
                pass
        try:
            result = answers[step].value()
        except SubmissionError as exc:
            if not any(isinstance(earlier, Reorder) for earlier in script[:step]):
                raise
            report.diagnose(REORDER_DIM)
            raised = exception_text(exc.type_name, exc.message[:120], parens=True)
            raise Mismatch(
                f"step {step + 1}, {op}, after a reorder, raised {raised}: "
                f"reorder changed the shape of the cache, so it probably gathers along the wrong "
                f"dimension (the batch is dim 0 of (B, H, T, hd))"
            ) from None
        handle, result = result
        held.append((handle, op, op.start + op.k.shape[2]))
        got_k, got_v = pair(result, str(op))
        suspects = [
            suspect
            for i, suspect in enumerate(suspects)
            if i in theirs and close(got_k, theirs[i][0]) and close(got_v, theirs[i][1])
        ]
        for got, want, what in ((got_k, want_k, "k_all"), (got_v, want_v, "v_all")):
            if got.dtype != want.dtype:
                raise Mismatch(
                    f"after {op}, {what} has dtype {got.dtype}: the cache should store the dtype it was "
                    f"built with ({dims.dtype}: KVCache(..., dtype=...), torch.float32 by default)"
                )
            if not close(got, want):
                message = f"step {step + 1}, {op}: {explain_difference(got, want, what)}"
                if suspects:
                    report.diagnose(suspects[0][0])
                    message += f". It looks like {suspects[0][0]}"
                raise Mismatch(message)

    expect_views(report, session, ref, held)


def expect_views(
    report: CheckReport, session: SubmissionLink, ref: KVCache, held: list[tuple[Handle, Update, int]]
) -> None:
    """Every pair update returned (since the last reorder), read again now, shows the buffer as it is."""
    if not held:
        return
    box = session.new_dict({str(i): handle for i, (handle, _, _) in enumerate(held)})
    now = session.get(box)
    for i, (_, op, end) in enumerate(held):
        got_k, got_v = pair(now.get(str(i)) if isinstance(now, dict) else None, str(op))
        want_k, want_v = ref.k[op.layer, :, :, :end], ref.v[op.layer, :, :, :end]
        if close(got_k, want_k) and close(got_v, want_v):
            continue
        report.diagnose(COPY)
        raise Mismatch(
            f"the k_all returned by {op}, read again after the later updates, no longer matches the "
            f"cache: {COPY} (slice the preallocated buffer, don't clone or cat)"
        )


def decode_script(rng: Rng, dims: Dims, prompt: int, steps: int) -> list[Update | Reorder]:
    """Prefill every layer with `prompt` positions, then `steps` one-token updates on every layer,
    then the last position written again on every layer (a rejected draft token replaced)."""
    script: list[Update | Reorder] = [rng.update(dims, layer, 0, prompt) for layer in range(dims.n_layers)]
    for t in range(prompt, prompt + steps):
        script += [rng.update(dims, layer, t, 1) for layer in range(dims.n_layers)]
    script += [rng.update(dims, layer, prompt + steps - 1, 1) for layer in range(dims.n_layers)]
    return script

"""gqa-attention's layer: one configuration's random weights, the float64 reference module, and the
submission's module built and called through the SubmissionLink, with the checks of what each
forward returns (graders/checks/gqa_attention.py's tests drive it).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import torch

from graders.checks.attention_common import (
    decode_tensor,
    describe,
    expect_match,
    raised,
    randn,
    submission_context,
)
from graders.checks.gqa_attention_mistakes import (
    cache_variants,
    output_variants,
)
from graders.checks.report import CheckReport, Mismatch
from graders.reference.gqa import GQA, KVCache
from graders.sandbox.protocol import Handle, Pending, SubmissionError, SubmissionLink

ENTRY_POINT = "GQA"  # the class the submission defines


def unpack(result: Any) -> tuple[Any, tuple[torch.Tensor, torch.Tensor]]:
    """forward's result -> (y, (k, v)), or Mismatch saying what came back instead."""
    if not isinstance(result, tuple | list) or len(result) != 2:
        raise Mismatch(f"forward returned {describe(result)}, expected a pair (y, (k, v))")
    y, cache = result
    if not isinstance(cache, tuple | list) or len(cache) != 2:
        raise Mismatch(f"the cache forward returned is {describe(cache)}, expected a pair (k, v) of tensors")
    return y, (decode_tensor(cache[0], "the returned k"), decode_tensor(cache[1], "the returned v"))


_NOT_A_MODULE = "GQA has no load_state_dict: it should subclass torch.nn.Module"


class Layer:
    """One configuration: random weights, the reference module, and the submission's module."""

    def __init__(self, gen: torch.Generator, B: int, d: int, n_q: int, n_kv: int) -> None:
        self.B, self.d, self.n_q, self.n_kv = B, d, n_q, n_kv
        self.hd = d // n_q
        self.state = {
            "q.weight": randn(gen, d, d, scale=d**-0.5),
            "kv.weight": randn(gen, 2 * n_kv * self.hd, d, scale=d**-0.5),
            "o.weight": randn(gen, d, d, scale=d**-0.5),
        }
        self.w64 = {key: value.double() for key, value in self.state.items()}
        self.ref = GQA(d, n_q, n_kv).double()
        self.ref.load_state_dict(self.w64)
        self._built: Handle | Mismatch | None = None
        self._loading: Pending | None = None  # load_state_dict, queued with the first test's calls
        self._answers: dict[tuple[Any, ...], tuple[torch.Tensor, KVCache]] = {}

    @property
    def kind(self) -> str:
        return "MHA" if self.n_kv == self.n_q else "MQA" if self.n_kv == 1 else "GQA"

    def label(self, T: int | None = None) -> str:
        t = "" if T is None else f" T={T}"
        return f"{self.kind} B={self.B}{t} d={self.d} n_q={self.n_q} n_kv={self.n_kv}"

    def tokens(self, gen: torch.Generator, T: int) -> torch.Tensor:
        return randn(gen, self.B, T, self.d)

    def build(self, session: SubmissionLink) -> Handle:
        """The submission's module with our weights, built once per configuration (a failure too)."""
        if self._built is None:
            try:
                self._built = self._build(session)
            except Mismatch as exc:
                self._built = exc
        if isinstance(self._built, Mismatch):
            raise Mismatch(str(self._built))
        return self._built

    def _build(self, session: SubmissionLink) -> Handle:
        with submission_context(f"while building GQA({self.d}, {self.n_q}, {self.n_kv})"):
            module = session.call(ENTRY_POINT, self.d, self.n_q, self.n_kv, keep=True)
        try:  # answered with the first forward's round trip, checked before its answer
            self._loading = session.call_later(module.load_state_dict, self.state)
        except AttributeError:  # the in-process session looks the attribute up on our side
            raise Mismatch(_NOT_A_MODULE) from None
        return module

    def _loaded(self) -> None:
        """Raise (and keep, for the later tests) the failure of the queued load_state_dict."""
        loading, self._loading = self._loading, None
        if loading is None:
            return
        try:
            loading.value()
        except SubmissionError as exc:
            if exc.type_name == "AttributeError" and "load_state_dict" in exc.message:
                self._built = Mismatch(_NOT_A_MODULE)  # the sandbox looks it up in the submission's process
            else:
                shapes = ", ".join(f"{key} {tuple(value.shape)}" for key, value in self.state.items())
                self._built = raised(exc, f"while loading a state dict with {shapes}, strict")
            raise Mismatch(str(self._built)) from None

    def reference(self, x: torch.Tensor, cache: KVCache | None = None) -> tuple[torch.Tensor, KVCache]:
        """float64 truth for float32 inputs, computed once per distinct (x, cache): a call on a
        changed cache asks for the same answer up to four times (y, the KEPT_STATE probe, the
        returned cache), and each chunk's check the one its test drew."""
        key = tuple(
            None if t is None else (t.dtype, t.shape, t.numpy().tobytes()) for t in (x, *(cache or ()))
        )
        if key not in self._answers:
            cache64 = None if cache is None else (cache[0].double(), cache[1].double())
            with torch.no_grad():
                self._answers[key] = self.ref(x.double(), cache64)
        return self._answers[key]

    def forward(
        self,
        session: SubmissionLink,
        module: Handle,
        x: torch.Tensor,
        cache: KVCache | None = None,
        hint: str = "",
    ) -> tuple[Any, tuple[torch.Tensor, torch.Tensor]]:
        """module(x) or module(x, cache); the submission's exception gets a hint about the call."""
        return self.forward_later(session, module, x, cache, hint)()

    def forward_later(
        self,
        session: SubmissionLink,
        module: Handle,
        x: torch.Tensor,
        cache: KVCache | None = None,
        hint: str = "",
    ) -> Callable[[], tuple[Any, tuple[torch.Tensor, torch.Tensor]]]:
        """forward, queued (SubmissionLink.call_later): a test queues all its calls, which go out
        in one round trip (every cache passed in is the grader's, so none waits for an answer);
        the thunk returns what forward returned, or raises what it raised, with the hint."""
        if cache is None:
            hint = hint or f"calling forward(x) with x {tuple(x.shape)}"
            pending = session.call_later(module, x)
        else:
            hint = hint or (
                f"calling forward(x, cache) with x {tuple(x.shape)} and a cache k {tuple(cache[0].shape)}"
            )
            pending = session.call_later(module, x, cache)

        def answer() -> tuple[Any, tuple[torch.Tensor, torch.Tensor]]:
            self._loaded()
            with submission_context(hint):
                return unpack(pending.value())

        return answer

    def expect_output(
        self, report: CheckReport, got: Any, x: torch.Tensor, cache: KVCache | None, what: str
    ) -> None:
        """got must equal the reference y for x on top of cache (both as the submission received them)."""
        cache64 = None if cache is None else (cache[0].double(), cache[1].double())
        want = self.reference(x, cache)[0].float()
        expect_match(
            report,
            got,
            want,
            what,
            lambda: output_variants(self.w64, x.double(), cache64, self.n_q, self.n_kv),
        )

    def expect_cache(self, report: CheckReport, got: KVCache, want: KVCache, new: int, what: str) -> None:
        """got (k, v) must be want's (B, n_kv, S, hd); `new` positions came from this call."""
        for i, name in enumerate(("k", "v")):
            right, other = want[i].float(), want[1 - i].float()
            expect_match(
                report,
                got[i],
                right,
                f"{what}, the returned {name} (B, n_kv, S, hd)",
                partial(cache_variants, right, other, self.n_q, new),
            )

"""sliding-window-cache, model-based: random scripts of updates on two caches against a plain model.

hypothesis's stateful testing drives the reference SlidingWindowCache beside two caches built from
the code under test with the same arguments (so a storage two caches share shows), each against a
model that keeps every token it was given in a list: after t tokens the kept positions are those
below n_sink and the last `window` of the rest, in position order. Every update is checked the
moment it returns: the keys, values (exactly) and integer positions are the model's, in the dtype
asked for; and after construction and after every update the tensor storages each cache holds
(graders/sandbox/footprint.storages) are exactly what it held when built, that is, keys and
values for n_sink + window positions in that dtype, never growing nor moving, never shared with
the other cache. Windows of 1 to 4, up to two sinks and chunks up to two past n_sink + window
make wrap-around, a chunk wrapping in the middle and a chunk longer than the window come up in
almost every script.
"""

from __future__ import annotations

import hypothesis.strategies as st
import pytest
import torch
from hypothesis import HealthCheck, Phase, settings
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule, run_state_machine_as_test

from graders.checks import sliding_window_cache as check
from graders.reference.sliding_window import SlidingWindowCache
from graders.sandbox.footprint import storages
from tests.graders.checks.helpers import challenge_dir
from tests.graders.golden import CASES, Case

SOLUTION = (challenge_dir(check.SLUG) / "solution.py").read_text()
HD = 2


def load(code: str) -> dict[str, object]:
    namespace: dict[str, object] = {}
    exec(code, namespace)
    return namespace


class Model:
    """Every token ever given, (B, H, hd) each; the kept ones are picked out by position."""

    def __init__(self, window: int, n_sink: int) -> None:
        self.window, self.n_sink = window, n_sink
        self.keys: list[torch.Tensor] = []
        self.values: list[torch.Tensor] = []

    def update(self, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, list[int]]:
        self.keys += list(k.unbind(2))
        self.values += list(v.unbind(2))
        seen = len(self.keys)
        kept = [p for p in range(seen) if p < self.n_sink or p >= seen - self.window]
        keys = torch.stack([self.keys[p] for p in kept], dim=2)  # (B, H, K, hd)
        values = torch.stack([self.values[p] for p in kept], dim=2)
        return keys, values, kept


def machine_for(code: str) -> type[RuleBasedStateMachine]:
    """A state machine that drives SlidingWindowCache from `code`, twice, and the reference."""
    namespace = load(code)

    class CacheAgainstModel(RuleBasedStateMachine):
        @initialize(
            window=st.integers(1, 4),
            n_sink=st.integers(0, 2),
            batch=st.integers(1, 2),
            n_heads=st.integers(1, 2),
            dtype=st.sampled_from([torch.float32, torch.float64]),
        )
        def start(self, window: int, n_sink: int, batch: int, n_heads: int, dtype: torch.dtype) -> None:
            self.window, self.n_sink, self.dims, self.dtype = window, n_sink, (batch, n_heads), dtype
            make = namespace["SlidingWindowCache"]
            # The reference, then the two caches under test; the reference shadows the first.
            self.caches = [SlidingWindowCache(window, n_sink, batch, n_heads, HD, dtype)] + [
                make(window, n_sink, batch, n_heads, HD, dtype)  # type: ignore[operator]
                for _ in range(2)
            ]
            self.models = [Model(window, n_sink) for _ in range(2)]
            self.built = [storages(cache) for cache in self.caches]
            needed = (
                2 * batch * n_heads * (n_sink + window) * HD * torch.empty((), dtype=dtype).element_size()
            )
            slack = 16 * (n_sink + window) + 64  # room for a positions tensor or a counter, as the battery
            for cache, held in zip(self.caches, self.built, strict=True):
                total = sum(n for _, n in held)
                assert needed <= total <= needed + slack, (
                    f"{type(cache).__name__}({window}, {n_sink}, {batch}, {n_heads}, {HD}, {dtype}) holds "
                    f"{total} bytes of tensors when built; n_sink + window positions of keys and values need "
                    f"{needed}"
                )
            shared = {p for p, _ in self.built[1]} & {p for p, _ in self.built[2]}
            assert not shared, "two caches built one after the other hold the same storage"
            self.gen = torch.Generator().manual_seed(window * 100 + n_sink * 10 + batch + n_heads)

        @rule(second=st.booleans(), n=st.integers(1, 8))
        def update(self, second: bool, n: int) -> None:
            """The next n tokens into one of the two caches (the reference follows the first)."""
            n = min(n, self.n_sink + self.window + 2)
            B, H = self.dims
            k = torch.randn(B, H, n, HD, generator=self.gen, dtype=self.dtype)
            v = torch.randn(B, H, n, HD, generator=self.gen, dtype=self.dtype) - 3  # never a key
            keys, values, kept = self.models[second].update(k, v)
            for cache in [self.caches[2]] if second else self.caches[:2]:
                got_k, got_v, positions = cache.update(k, v)
                assert got_k.dtype == got_v.dtype == self.dtype, (
                    f"kept keys are {got_k.dtype}, not {self.dtype}"
                )
                assert not positions.is_floating_point(), f"positions are {positions.dtype}, not integers"
                assert positions.tolist() == kept, f"positions {positions.tolist()}, expected {kept}"
                torch.testing.assert_close(got_k, keys, rtol=0, atol=0)
                torch.testing.assert_close(got_v, values, rtol=0, atol=0)

        @invariant()
        def storage_never_grows_or_moves(self) -> None:
            if not hasattr(self, "caches"):
                return
            for cache, built in zip(self.caches, self.built, strict=True):
                now = storages(cache)
                assert now == built, (
                    f"the cache's storages (data_ptr, bytes) were {built} when built and are {now} now"
                )

    return CacheAgainstModel


SETTINGS = settings(
    max_examples=40,
    stateful_step_count=15,
    deadline=None,
    suppress_health_check=[HealthCheck.filter_too_much],
)
TestSlidingWindowAgainstModel = machine_for(SOLUTION).TestCase
TestSlidingWindowAgainstModel.settings = SETTINGS


def cases(expect: str) -> list[Case]:
    found = [Case(check.SLUG, p) for p in sorted((CASES / check.SLUG).glob("*.py"))]
    return [c for c in found if c.expected()[0] == expect]


@pytest.mark.parametrize("case", cases("passed"), ids=lambda c: c.path.stem)
def test_a_correct_design_of_another_style_agrees_with_the_model(case: Case) -> None:
    """The machine is no stricter than the contract: another passing design passes it too."""
    run_state_machine_as_test(
        machine_for(case.path.read_text()), settings=settings(SETTINGS, max_examples=15)
    )


@pytest.mark.parametrize("case", cases("failed"), ids=lambda c: c.path.stem)
def test_the_model_finds_a_golden_mistake(case: Case) -> None:
    """The machine can fail: each named mistake's golden case breaks some script."""
    found = settings(
        SETTINGS, max_examples=300, database=None, derandomize=True, phases=[Phase.explicit, Phase.generate]
    )
    with pytest.raises(Exception):  # noqa: B017 - an assertion, or the crash the mistake causes
        run_state_machine_as_test(machine_for(case.path.read_text()), settings=found)


def test_every_known_mistake_has_a_golden_case_the_model_runs() -> None:
    phrases = [phrase for case in cases("failed") for phrase in case.expected()[1]]
    missing = [m for m in check.KNOWN_MISTAKES if not any(m.startswith(p) for p in phrases)]
    assert not missing, f"no golden case for the machine to find: {missing}"

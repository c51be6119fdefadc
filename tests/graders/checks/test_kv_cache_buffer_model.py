"""kv-cache-buffer, model-based: random scripts of update / reorder / bad calls against a plain model.

hypothesis's stateful testing drives the reference KVCache and the worked solution side by side
with a model that knows nothing of slabs or views: each layer is a Python list of positions, each
position one (B, H, hd) key and one value. Every call is checked the moment it returns:
update hands back exactly positions 0..start+n of the model's layer (so writing at 0, returning
only the new positions or the whole buffer, a shared layer or swapped keys and values all show);
two updates of one layer with no reorder between them return tensors at the same data_ptr(), and
every earlier such view shows the layer's current contents (a view, not a copy); a call that does
not fit (past max_len, a negative start, a batch, head count or head size of another cache, k and
v of different shapes) raises ValueError and changes nothing; a reorder by a random beam_idx (rows
repeat) is what the next update of every layer sees. max_len is 3 to 6 and a rule fills a layer
exactly to max_len, so the full buffer comes up in most scripts.
"""

from __future__ import annotations

import hypothesis.strategies as st
import pytest
import torch
from hypothesis import HealthCheck, Phase, assume, settings
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule, run_state_machine_as_test

from graders.checks import kv_cache_buffer as check
from graders.checks.kv_cache_buffer_mistakes import KNOWN_MISTAKES
from graders.reference.kv_cache import KVCache
from graders.sandbox import wire  # noqa: F401 - returns_copy_refreshed patches it, in-process too
from tests.graders.checks.helpers import challenge_dir
from tests.graders.golden import CASES, Case

SOLUTION = (challenge_dir(check.SLUG) / "solution.py").read_text()
HD = 2
BAD_CALLS = ["past_max_len", "negative_start", "batch", "heads", "head_dim", "k_v_differ"]


def load(code: str) -> dict[str, object]:
    namespace: dict[str, object] = {}
    exec(code, namespace)
    return namespace


class Model:
    """Per layer, the positions written so far: a list of (B, H, hd) keys and one of values."""

    def __init__(self, n_layers: int) -> None:
        self.keys: list[list[torch.Tensor]] = [[] for _ in range(n_layers)]
        self.values: list[list[torch.Tensor]] = [[] for _ in range(n_layers)]

    def update(self, layer: int, k: torch.Tensor, v: torch.Tensor, start: int) -> None:
        # start <= len(layer) in every script, so positions 0..start+n are all written.
        for i in range(k.shape[2]):
            for store, new in ((self.keys[layer], k), (self.values[layer], v)):
                if start + i < len(store):
                    store[start + i] = new[:, :, i]
                else:
                    store.append(new[:, :, i])

    def upto(self, layer: int, end: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Positions 0..end of a layer, (B, H, end, hd) each."""
        return torch.stack(self.keys[layer][:end], dim=2), torch.stack(self.values[layer][:end], dim=2)

    def reorder(self, beam_idx: torch.Tensor) -> None:
        for store in self.keys + self.values:
            store[:] = [position[beam_idx] for position in store]


def machine_for(code: str) -> type[RuleBasedStateMachine]:
    """A state machine that drives KVCache from `code` and the reference beside the model."""
    namespace = load(code)

    class CacheAgainstModel(RuleBasedStateMachine):
        @initialize(
            n_layers=st.integers(2, 3),
            batch=st.integers(2, 3),
            n_heads=st.integers(1, 3),
            max_len=st.integers(3, 6),
        )
        def start(self, n_layers: int, batch: int, n_heads: int, max_len: int) -> None:
            self.dims = (n_layers, batch, n_heads, max_len)
            self.model = Model(n_layers)
            make = namespace["KVCache"]
            self.caches = [
                KVCache(n_layers, batch, n_heads, max_len, HD),
                make(n_layers, batch, n_heads, max_len, HD),
            ]  # type: ignore[operator]
            # Per cache and layer, every (k_all, v_all) update returned since the last reorder.
            self.views: list[list[list[tuple[torch.Tensor, torch.Tensor]]]] = [
                [[] for _ in range(n_layers)] for _ in self.caches
            ]
            self.gen = torch.Generator().manual_seed(n_layers * 1000 + batch * 100 + n_heads * 10 + max_len)

        def _kv(
            self, n: int, batch: int = 0, heads: int = 0, hd: int = HD
        ) -> tuple[torch.Tensor, torch.Tensor]:
            B, H = batch or self.dims[1], heads or self.dims[2]
            k = torch.randn(B, H, n, hd, generator=self.gen)
            return k, torch.randn(B, H, n, hd, generator=self.gen) - 3  # never mistaken for a key

        def _update(self, layer: int, start: int, n: int) -> None:
            k, v = self._kv(n)
            self.model.update(layer, k, v, start)
            want = self.model.upto(layer, start + n)
            for cache, views in zip(self.caches, self.views, strict=True):
                k_all, v_all = cache.update(layer, k, v, start)
                assert k_all.shape == v_all.shape == want[0].shape, (
                    f"update({layer}, n={n}, start={start}) returned {tuple(k_all.shape)}, "
                    f"expected positions 0..{start + n}: {tuple(want[0].shape)}"
                )
                torch.testing.assert_close(k_all, want[0], rtol=0, atol=0)
                torch.testing.assert_close(v_all, want[1], rtol=0, atol=0)
                for earlier_k, earlier_v in views[layer]:
                    assert (earlier_k.data_ptr(), earlier_v.data_ptr()) == (
                        k_all.data_ptr(),
                        v_all.data_ptr(),
                    ), "two updates of one layer returned tensors at different addresses: a copy, not a view"
                views[layer].append((k_all, v_all))

        @rule(layer=st.integers(0, 2), back=st.integers(0, 2), n=st.integers(1, 3))
        def update(self, layer: int, back: int, n: int) -> None:
            """Append at the layer's end, or rewrite from up to two positions back."""
            assume(layer < self.dims[0])
            written = len(self.model.keys[layer])
            start = max(0, min(written - back, self.dims[3] - 1))
            self._update(layer, start, min(n, self.dims[3] - start))

        @rule(layer=st.integers(0, 2), back=st.integers(0, 3))
        def fill_to_max_len(self, layer: int, back: int) -> None:
            """start + n == max_len exactly: allowed, and the layer is full."""
            assume(layer < self.dims[0])
            start = max(0, min(len(self.model.keys[layer]), self.dims[3] - 1) - back)
            self._update(layer, start, self.dims[3] - start)

        @rule(layer=st.integers(0, 2), kind=st.sampled_from(BAD_CALLS), wider=st.booleans())
        def a_call_that_does_not_fit(self, layer: int, kind: str, wider: bool) -> None:
            assume(layer < self.dims[0])
            _, B, H, max_len = self.dims
            start = min(len(self.model.keys[layer]), max_len - 1)
            n = 1
            if kind == "past_max_len":
                n = max_len - start + 1
            if kind == "negative_start":
                start = -1 - int(wider)
            k, v = self._kv(n)
            if kind == "batch":  # a batch of 1 would broadcast into every row
                k, v = self._kv(n, batch=B + 1 if wider else 1)
            if kind == "heads":
                k, v = self._kv(n, heads=H + 1 if wider or H == 1 else 1)
            if kind == "head_dim":
                k, v = self._kv(n, hd=HD + 1 if wider else 1)
            if kind == "k_v_differ":
                v = self._kv(n + 1)[1] if wider else self._kv(n, hd=HD + 1)[1]
            for cache in self.caches:
                try:
                    cache.update(layer, k, v, start)
                except ValueError:
                    continue
                except Exception as error:  # noqa: BLE001 - any other exception is the mistake
                    raise AssertionError(
                        f"a call that does not fit ({kind}) raised {error!r}, not ValueError"
                    ) from error
                raise AssertionError(
                    f"update({layer}, k {tuple(k.shape)}, v {tuple(v.shape)}, start={start}) on a cache of "
                    f"(B, H, max_len, hd) = {(B, H, max_len, HD)} did not raise ValueError ({kind})"
                )

        @rule(rows=st.lists(st.integers(0, 2), min_size=3, max_size=3))
        def reorder(self, rows: list[int]) -> None:
            B = self.dims[1]
            beam_idx = torch.tensor([r % B for r in rows[:B]], dtype=torch.long)
            for cache, views in zip(self.caches, self.views, strict=True):
                cache.reorder(beam_idx)
                for layer_views in views:  # reorder may rebind: earlier views need not follow
                    layer_views.clear()
            self.model.reorder(beam_idx)

        @invariant()
        def earlier_views_show_the_layer_now(self) -> None:
            """A view handed out earlier sees every later write to its positions (no copy)."""
            if not hasattr(self, "model"):
                return
            for views in self.views:
                for layer, layer_views in enumerate(views):
                    for earlier_k, earlier_v in layer_views:
                        want = self.model.upto(layer, earlier_k.shape[2])
                        assert torch.equal(earlier_k, want[0]) and torch.equal(earlier_v, want[1]), (
                            f"a tensor an earlier update of layer {layer} returned no longer shows what the "
                            "layer holds: a copy, or another layer wrote into it"
                        )

    return CacheAgainstModel


SETTINGS = settings(
    max_examples=40,
    stateful_step_count=20,
    deadline=None,
    suppress_health_check=[HealthCheck.filter_too_much],
)
TestKVCacheAgainstModel = machine_for(SOLUTION).TestCase
TestKVCacheAgainstModel.settings = SETTINGS


def cases(expect: str) -> list[Case]:
    found = [Case(check.SLUG, p) for p in sorted((CASES / check.SLUG).glob("*.py"))]
    return [c for c in found if c.expected()[0] == expect]


@pytest.mark.parametrize("case", cases("passed"), ids=lambda c: c.path.stem)
def test_a_correct_design_of_another_style_agrees_with_the_model(case: Case) -> None:
    """The machine is no stricter than the contract: the other passing layouts pass it too."""
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
    missing = [m for m in KNOWN_MISTAKES if not any(m.startswith(p) for p in phrases)]
    assert not missing, f"no golden case for the machine to find: {missing}"

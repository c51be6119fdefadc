"""paged-kv-cache, model-based: random scripts of append / fork / free against a plain model.

hypothesis's stateful testing drives the reference cache and the worked solution side by side
with a model that knows nothing of physical blocks: each sequence is a list of its tokens and a
list of block tags (a fresh tag for each block a sequence takes, the parent's tags after a fork,
a fresh tag when a shared, partly full last block is copied). Every call is checked the moment
it returns: num_free_blocks() equals n_blocks minus the distinct tags, each block table maps
one-to-one onto the model's tags (so sharing is exactly the model's), gather equals the tokens,
and a MemoryError comes exactly when the model says the free blocks do not suffice, changing
nothing. The pool is small (3 to 6 blocks of 2 or 3 slots) and ids come from four, so a full
pool, an id reused after free, and a chunk crossing a block boundary right after a fork come up
in almost every script.
"""

from __future__ import annotations

from pathlib import Path

import hypothesis.strategies as st
import pytest
import torch
from hypothesis import HealthCheck, Phase, assume, settings
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule, run_state_machine_as_test

from graders.checks import paged_kv_cache as check
from graders.reference.paged_cache import PagedKVCache, attention, blocks_for
from tests.graders.checks.helpers import cases_dir, challenge_dir

SOLUTION = (challenge_dir(check.SLUG) / "solution.py").read_text()
IDS = st.sampled_from([3, 7, 8, 11])
H, HD = 2, 3


def load(code: str) -> dict[str, object]:
    namespace: dict[str, object] = {}
    exec(code, namespace)
    return namespace


class Model:
    """Tokens and block tags per sequence; the blocks a real cache holds are the distinct tags."""

    def __init__(self, n_blocks: int, block_size: int) -> None:
        self.n_blocks, self.bs = n_blocks, block_size
        self.tokens: dict[int, list[torch.Tensor]] = {}  # seq -> k (H, 1, hd) per position
        self.values: dict[int, list[torch.Tensor]] = {}
        self.tags: dict[int, list[int]] = {}
        self.next_tag = 0

    def holders(self, tag: int) -> int:
        return sum(tags.count(tag) for tags in self.tags.values())

    def free_blocks(self) -> int:
        return self.n_blocks - len({t for tags in self.tags.values() for t in tags})

    def needs(self, seq: int, n: int) -> int:
        tags, length = self.tags.get(seq, []), len(self.tokens.get(seq, []))
        copy = n > 0 and length % self.bs != 0 and self.holders(tags[-1]) > 1
        return blocks_for(length + n, self.bs) - len(tags) + copy

    def _fresh(self) -> int:
        self.next_tag += 1
        return self.next_tag

    def append(self, seq: int, k: torch.Tensor, v: torch.Tensor) -> None:
        n = k.shape[1]
        tags = self.tags.setdefault(seq, [])
        toks, vals = self.tokens.setdefault(seq, []), self.values.setdefault(seq, [])
        if n and len(toks) % self.bs and self.holders(tags[-1]) > 1:
            tags[-1] = self._fresh()  # copy-on-write: the others keep the old block
        tags += [self._fresh() for _ in range(blocks_for(len(toks) + n, self.bs) - len(tags))]
        toks += [k[:, i : i + 1] for i in range(n)]  # (H, 1, hd) each; none for n = 0
        vals += [v[:, i : i + 1] for i in range(n)]

    def fork(self, src: int, dst: int) -> None:
        self.tags[dst] = list(self.tags[src])
        self.tokens[dst], self.values[dst] = list(self.tokens[src]), list(self.values[src])

    def free(self, seq: int) -> None:
        del self.tags[seq], self.tokens[seq], self.values[seq]

    def gather(self, seq: int) -> tuple[torch.Tensor, torch.Tensor]:
        if not self.tokens[seq]:
            return torch.zeros(H, 0, HD), torch.zeros(H, 0, HD)
        return torch.cat(self.tokens[seq], dim=1), torch.cat(self.values[seq], dim=1)


def machine_for(code: str) -> type[RuleBasedStateMachine]:
    """A state machine that drives PagedKVCache from `code` and the reference beside the model."""
    namespace = load(code)

    class CacheAgainstModel(RuleBasedStateMachine):
        @initialize(n_blocks=st.integers(3, 6), block_size=st.sampled_from([2, 3]))
        def start(self, n_blocks: int, block_size: int) -> None:
            self.model = Model(n_blocks, block_size)
            make = namespace["PagedKVCache"]
            self.caches = [PagedKVCache(n_blocks, block_size, H, HD), make(n_blocks, block_size, H, HD)]  # type: ignore[operator]
            self.paged_attention = [check_attention_ref, namespace["paged_attention"]]
            self.gen = torch.Generator().manual_seed(n_blocks * 10 + block_size)

        def _append(self, seq: int, n: int) -> None:
            k = torch.randn(H, n, HD, generator=self.gen)
            v = torch.randn(H, n, HD, generator=self.gen) - 2
            if self.model.needs(seq, n) > self.model.free_blocks():
                for cache in self.caches:
                    before = (cache.num_free_blocks(), seq in self.model.tags and cache.block_table(seq))
                    try:
                        cache.append(seq, k, v)
                    except MemoryError:
                        pass
                    else:
                        raise AssertionError(f"append({seq}, n={n}) fits in no free blocks and did not raise")
                    after = (cache.num_free_blocks(), seq in self.model.tags and cache.block_table(seq))
                    assert after == before, "a failed append changed the cache"
                return
            for cache in self.caches:
                cache.append(seq, k, v)
            self.model.append(seq, k, v)

        @rule(seq=IDS, n=st.integers(1, 7))  # the contract leaves an empty append open
        def append(self, seq: int, n: int) -> None:
            self._append(seq, n)

        @rule(src=IDS, dst=IDS, extra=st.integers(1, 3), parent_first=st.booleans())
        def fork_then_cross_a_block_boundary(
            self, src: int, dst: int, extra: int, parent_first: bool
        ) -> None:
            """A fork, then a chunk into the parent or the child that fills the shared last block
            and spills into the next."""
            assume(src in self.model.tags and dst not in self.model.tags)
            for cache in self.caches:
                cache.fork(src, dst)
            self.model.fork(src, dst)
            seq = src if parent_first else dst
            self._append(seq, self.model.bs - len(self.model.tokens[seq]) % self.model.bs + extra)

        @rule(src=IDS, dst=IDS)
        def fork(self, src: int, dst: int) -> None:
            assume(src in self.model.tags and dst not in self.model.tags)
            for cache in self.caches:
                cache.fork(src, dst)
            self.model.fork(src, dst)

        @rule(seq=IDS)
        def free(self, seq: int) -> None:
            if seq not in self.model.tags:
                for cache in self.caches:
                    try:
                        cache.free(seq)
                    except KeyError:
                        continue
                    raise AssertionError(f"free({seq}) of an unknown id did not raise KeyError")
                return
            for cache in self.caches:
                cache.free(seq)
            self.model.free(seq)

        @rule()
        def attend(self) -> None:
            live = [s for s in sorted(self.model.tags) if self.model.tokens[s]]
            assume(live)
            q = torch.randn(len(live), H, 1, HD, generator=self.gen)
            want = torch.stack([attention(q[b], *self.model.gather(s)) for b, s in enumerate(live)])
            for cache, attend in zip(self.caches, self.paged_attention, strict=True):
                torch.testing.assert_close(attend(q, cache, live), want)  # type: ignore[operator]

        @invariant()
        def agrees_with_the_model(self) -> None:
            if not hasattr(self, "model"):
                return
            for cache in self.caches:
                assert cache.num_free_blocks() == self.model.free_blocks()
                physical: dict[int, int] = {}  # the cache's block -> the model's tag
                for seq, tags in self.model.tags.items():
                    table = cache.block_table(seq)
                    assert len(table) == len(tags) == blocks_for(len(self.model.tokens[seq]), self.model.bs)
                    for block, tag in zip(table, tags, strict=True):
                        assert physical.setdefault(block, tag) == tag, (
                            "two sequences share a block by mistake"
                        )
                    for got, want in zip(cache.gather(seq), self.model.gather(seq), strict=True):
                        torch.testing.assert_close(got, want, rtol=0, atol=0)
                assert len(set(physical.values())) == len(physical), "one block of the model in two places"

    return CacheAgainstModel


def check_attention_ref(q: torch.Tensor, cache: PagedKVCache, seq_ids: list[int]) -> torch.Tensor:
    from graders.reference.paged_cache import paged_attention

    return paged_attention(q, cache, seq_ids)


SETTINGS = settings(
    max_examples=60,
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.filter_too_much],
)
TestPagedCacheAgainstModel = machine_for(SOLUTION).TestCase
TestPagedCacheAgainstModel.settings = SETTINGS


@pytest.mark.parametrize(
    "case",
    [
        "no_copy_on_write.py",
        "copy_on_write_child_only.py",
        "free_returns_shared_blocks.py",
        "reused_id_keeps_length.py",
    ],
)
def test_the_model_finds_a_golden_mistake(case: str) -> None:
    """The machine can fail: each of these mistakes breaks some script."""
    code = Path(cases_dir(check.SLUG) / case).read_text()
    # Finding the failing script is the point; shrinking it (most of the time) is not.
    found = settings(
        SETTINGS, max_examples=300, database=None, derandomize=True, phases=[Phase.explicit, Phase.generate]
    )
    with pytest.raises(Exception):  # noqa: B017 - an assertion, or the crash the mistake causes
        run_state_machine_as_test(machine_for(code), settings=found)

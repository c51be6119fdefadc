"""The radix prefix cache's reference against a plain model: a set of cached prefixes with use ticks.

The model stores every cached prefix as a tuple with the tick it was last used; a leaf is a prefix
no other cached prefix extends. hypothesis's stateful testing drives both with shared prefixes and
small capacities and compares match, insert and len after every call.
"""

from __future__ import annotations

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from graders.reference.prefix_cache import PrefixCache

TOKENS = st.lists(st.integers(0, 3), max_size=7)  # a small alphabet: prefixes are shared often


class Model:
    def __init__(self, capacity: int) -> None:
        self.capacity, self.clock = capacity, 0
        self.used: dict[tuple[int, ...], int] = {}  # cached prefix -> tick last used

    def match(self, tokens: list[int]) -> int:
        self.clock += 1
        n = 0
        while n < len(tokens) and tuple(tokens[: n + 1]) in self.used:
            n += 1
            self.used[tuple(tokens[:n])] = self.clock
        return n

    def insert(self, tokens: list[int]) -> int:
        self.clock += 1
        new = sum(tuple(tokens[: i + 1]) not in self.used for i in range(len(tokens)))
        for i in range(len(tokens)):
            self.used[tuple(tokens[: i + 1])] = self.clock
        while len(self.used) > self.capacity:
            leaves = [
                p for p in self.used if not any(len(q) == len(p) + 1 and q[:-1] == p for q in self.used)
            ]
            del self.used[min(leaves, key=self.used.__getitem__)]
        return new


class CacheAgainstModel(RuleBasedStateMachine):
    @initialize(capacity=st.integers(0, 10))
    def start(self, capacity: int) -> None:
        self.cache, self.model = PrefixCache(capacity), Model(capacity)

    @rule(tokens=TOKENS)
    def match(self, tokens: list[int]) -> None:
        assert self.cache.match(tokens) == self.model.match(tokens)

    @rule(tokens=TOKENS)
    def insert(self, tokens: list[int]) -> None:
        assert self.cache.insert(tokens) == self.model.insert(tokens)

    @invariant()
    def same_contents(self) -> None:
        assert len(self.cache) == len(self.model.used) <= self.model.capacity
        assert self.cache.sequences() == set(self.model.used)  # never an inner token without its path


TestCacheAgainstModel = CacheAgainstModel.TestCase
TestCacheAgainstModel.settings = settings(max_examples=200, stateful_step_count=30, deadline=None)


def test_match_refreshes_use_so_the_other_leaf_goes() -> None:
    cache = PrefixCache(capacity=6)
    assert cache.insert([1, 2, 3]) == 3
    assert cache.insert([1, 5, 6]) == 2  # shares the 1
    assert cache.match([1, 2, 3, 4]) == 3  # [1, 2, 3] is now the most recently used
    assert cache.insert([7, 8]) == 2  # 7 tokens: one leaf goes, the least recently used: 6
    assert len(cache) == 6 and cache.match([1, 5, 6]) == 2


def test_the_just_inserted_path_goes_last_and_from_its_leaf() -> None:
    cache = PrefixCache(capacity=3)
    cache.insert([9])
    assert cache.insert([1, 2, 3, 4]) == 4  # 5 tokens: 9 goes, then 4 (the new path's leaf)
    assert len(cache) == 3 and cache.match([1, 2, 3, 4]) == 3 and cache.match([9]) == 0

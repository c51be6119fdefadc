"""The radix prefix cache's known mistakes: each one rule of the contract broken on purpose.

`Slip` names a mistake; `SlippedCache(slip, capacity)` is a plain model of the cache (every
cached prefix as a tuple, with the tick it was last used; a leaf is a prefix no other cached
prefix extends) with that one rule changed. It is written apart from the reference tree, so
a mistake is named by behaviour: the battery replays a failing script on every slipped cache,
the one whose whole trace equals the submission's names the mistake, and its `REASONS` entry
is the rule the submission broke, said in the verdict after "because".
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum


class Slip(Enum):
    MATCH_NO_REFRESH = "match does not mark the matched tokens as used"
    INSERT_NEW_ONLY = "insert marks only the tokens it newly stored as used"
    MOST_RECENT = "the most recently used leaf is evicted"
    EVICTS_INNER = "a token another cached token follows is evicted"
    EVICTS_BRANCH = "eviction drops the least recently used leaf's whole unshared branch"
    EVICTS_BEFORE_INSERT = "room is made before the new tokens are stored"
    KEEPS_ONE_FEWER = "the cache keeps at most capacity - 1 tokens"
    NEVER_EVICTS = "nothing is evicted: more than capacity tokens stay"
    COUNTS_SHARED = "insert counts the shared prefix as newly stored"
    COUNT_AFTER_EVICTION = "insert's newly stored count is taken after eviction"


# The rule each mistake breaks, as the verdict says it after "because".
REASONS: dict[Slip, str] = {
    Slip.MATCH_NO_REFRESH: "the tokens of the matched prefix become used at match's tick, "
    "so a leaf matched since is kept longer",
    Slip.INSERT_NEW_ONLY: "all tokens of an insert become used at its tick, the shared ones too",
    Slip.MOST_RECENT: "the leaf used least recently is evicted first (LRU by the logical clock)",
    Slip.EVICTS_INNER: "only a leaf token (one no cached token follows) is evicted; "
    "its parent may be the next",
    Slip.EVICTS_BRANCH: "eviction takes one leaf token at a time, only while more than capacity are stored",
    Slip.EVICTS_BEFORE_INSERT: "insert stores (and marks as used) first, then evicts: "
    "a prefix it shares is used at its tick",
    Slip.KEEPS_ONE_FEWER: "eviction runs only while more than capacity tokens are stored",
    Slip.NEVER_EVICTS: "while more than capacity tokens are stored, the least recently used leaf is evicted",
    Slip.COUNTS_SHARED: "insert returns how many tokens it newly stored: a cached prefix is shared, not new",
    Slip.COUNT_AFTER_EVICTION: "insert's count is taken before any eviction, "
    "even of the tokens it just stored",
}


def mistake_sentence(slip: Slip) -> str:
    """The diagnosis line: what the code does, then the rule."""
    return f"{slip.value}: {REASONS[slip]}"


class SlippedCache:
    """The cache as a dict of cached prefixes -> last-used tick, with one rule broken (`slip`)."""

    def __init__(self, slip: Slip | None, capacity: int) -> None:
        self.slip, self.capacity, self.clock = slip, capacity, 0
        self.used: dict[tuple[int, ...], int] = {}  # in the order first stored

    def __len__(self) -> int:
        return len(self.used)

    def match(self, tokens: Sequence[int]) -> int:
        self.clock += 1
        n = 0
        while n < len(tokens) and tuple(tokens[: n + 1]) in self.used:
            n += 1
            if self.slip is not Slip.MATCH_NO_REFRESH:
                self.used[tuple(tokens[:n])] = self.clock
        return n

    def insert(self, tokens: Sequence[int]) -> int:
        self.clock += 1
        before = len(self.used)
        prefixes = [tuple(tokens[: i + 1]) for i in range(len(tokens))]
        if self.slip is Slip.EVICTS_BEFORE_INSERT:
            while self.used and len(self.used) + sum(p not in self.used for p in prefixes) > self.capacity:
                self._evict_one()
        new = 0
        for p in prefixes:
            if p not in self.used:
                new += 1
            elif self.slip is Slip.INSERT_NEW_ONLY:
                continue
            self.used[p] = self.clock
        limit = self.capacity - 1 if self.slip is Slip.KEEPS_ONE_FEWER else self.capacity
        while self.slip is not Slip.NEVER_EVICTS and len(self.used) > limit:
            self._evict_one()
        if self.slip is Slip.COUNTS_SHARED:
            return len(tokens)
        if self.slip is Slip.COUNT_AFTER_EVICTION:
            return max(0, len(self.used) - before)
        return new

    def leaves(self) -> list[tuple[int, ...]]:
        followed = {p[:-1] for p in self.used}
        return [p for p in self.used if p not in followed]

    def _evict_one(self) -> None:
        if self.slip is Slip.EVICTS_INNER:  # the LRU token anywhere, the earliest stored on a tie
            del self.used[min(self.used, key=self.used.__getitem__)]
            return
        pick = max if self.slip is Slip.MOST_RECENT else min
        victim = pick(self.leaves(), key=self.used.__getitem__)
        del self.used[victim]
        while self.slip is Slip.EVICTS_BRANCH and len(victim) > 1:
            parent = victim[:-1]
            if any(p[:-1] == parent for p in self.used):
                break  # another branch goes on from here
            del self.used[parent]
            victim = parent

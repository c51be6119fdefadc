"""Scripts of prefix-cache calls, their traces, a seeded generator of them, and the shrinker.

A *script* is a capacity and a list of ops, `Match(tokens)` or `Insert(tokens)`. Its *trace* is
one observation per op: the pair (what the call returned, `len(cache)` right after it). The
battery compares the submission's trace with the reference's op by op; a failing script is
shrunk to the shortest prefix, then the fewest ops, then the shortest token lists, that still
fails, before the verdict shows it.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Protocol


@dataclass(frozen=True)
class Match:
    tokens: tuple[int, ...]

    def __str__(self) -> str:
        return f"match {list(self.tokens)}"


@dataclass(frozen=True)
class Insert:
    tokens: tuple[int, ...]

    def __str__(self) -> str:
        return f"insert {list(self.tokens)}"


Op = Match | Insert
Seen = tuple[int, int]  # (match's or insert's answer, len(cache) after the call)


class Cache(Protocol):
    def match(self, tokens: Sequence[int]) -> int: ...
    def insert(self, tokens: Sequence[int]) -> int: ...
    def __len__(self) -> int: ...


def describe(ops: Sequence[Op]) -> str:
    return ", ".join(map(str, ops)) if ops else "no calls"


def trace(make: Callable[[], Cache], ops: Sequence[Op]) -> list[Seen]:
    """The trace of a Python cache (the reference or a slipped one) on a script."""
    cache = make()
    seen: list[Seen] = []
    for op in ops:
        call = cache.match if isinstance(op, Match) else cache.insert
        seen.append((call(list(op.tokens)), len(cache)))
    return seen


def random_capacity(py: random.Random) -> int:
    """Small: a few requests fill it, so eviction runs on most inserts."""
    return py.randint(2, 10)


def random_script(py: random.Random, n_ops: int) -> list[Op]:
    """Requests built from a few shared stems (system prompts) and short own suffixes.

    The alphabet is small (0-5), so suffixes collide with each other and stems with suffixes:
    branches split at every depth. Every script starts with an insert (a match on an empty
    cache tells nothing)."""
    stems = [tuple(py.randint(0, 5) for _ in range(py.randint(1, 4))) for _ in range(py.randint(2, 3))]
    ops: list[Op] = []
    for i in range(n_ops):
        stem = py.choice(stems)
        tokens = stem[: py.randint(1, len(stem))] + tuple(py.randint(0, 5) for _ in range(py.randint(0, 3)))
        ops.append(Insert(tokens) if i == 0 or py.random() < 0.55 else Match(tokens))
    return ops


def lru_script(py: random.Random) -> tuple[int, list[Op]]:
    """A capacity and a script aimed at the LRU order: store 2-4 sequences (none a prefix of another,
    so each ends in a leaf) filling the cache exactly, use some of them again (a match, or an insert
    that stores nothing new), store 1-3 fresh tokens (ids 6-8, outside the other scripts' alphabet)
    so as many leaves are evicted, then match every sequence to see which went."""
    stem = tuple(py.randint(0, 5) for _ in range(py.randint(0, 2)))
    want = py.randint(2, 4)
    seqs: list[tuple[int, ...]] = []
    while len(seqs) < want:
        s = stem[: py.randint(0, len(stem))] + tuple(py.randint(0, 5) for _ in range(py.randint(1, 3)))
        if all(s != t[: len(s)] and t != s[: len(t)] for t in seqs):
            seqs.append(s)
    ops: list[Op] = [Insert(s) for s in seqs]
    for s in py.sample(seqs, py.randint(1, len(seqs))):
        ops.append(Match(s) if py.random() < 0.5 else Insert(s))
    capacity = len({s[: i + 1] for s in seqs for i in range(len(s))})
    fresh = tuple(range(6, 6 + py.randint(1, 3)))
    return capacity, [*ops, Insert(fresh), *(Match(s) for s in py.sample(seqs, len(seqs)))]


def shrink(ops: list[Op], fails: Callable[[list[Op]], int | None], budget: int = 40) -> list[Op]:
    """A shorter script that still fails: the failing prefix, ops removed a chunk at a time, then
    tokens dropped from the ends of token lists.

    `fails` runs a candidate on a fresh submission object and returns the index of its first
    differing op (None: it passes); `budget` caps how many candidates are tried (each costs two
    round trips to the sandbox)."""
    first = fails(list(ops))
    current = list(ops) if first is None else list(ops[: first + 1])
    left = [budget]

    def attempt(candidate: list[Op]) -> bool:
        nonlocal current
        if left[0] <= 0 or not any(isinstance(op, Insert) for op in candidate):
            return False
        left[0] -= 1
        at = fails(candidate)
        if at is None:
            return False
        current = candidate[: at + 1]
        return True

    chunk = max(1, len(current) // 2)
    while chunk >= 1 and left[0] > 0:
        i, removed = 0, False
        while i < len(current) and left[0] > 0:
            if attempt(current[:i] + current[i + chunk :]):
                removed = True
            else:
                i += chunk
        if not removed:
            chunk //= 2
    i = 0
    while i < len(current) and left[0] > 0:
        op = current[i]
        if len(op.tokens) > 1 and attempt(
            current[:i] + [replace(op, tokens=op.tokens[:-1])] + current[i + 1 :]
        ):
            continue  # the same op may lose another token
        i += 1
    return current

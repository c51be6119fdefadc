"""A token-level radix (prefix) tree with LRU eviction of leaf tokens (radix-prefix-cache).

SGLang's RadixAttention (Zheng et al. 2023, arXiv:2312.07104) keeps the KV cache of finished
requests in a radix tree keyed by token ids, so a new request reuses the longest cached prefix
of its prompt; under memory pressure it evicts least-recently-used leaves, never a node that a
longer cached sequence still goes through. This reference keeps one node per token (the
contract counts capacity in tokens), so "a leaf" is a token no cached token follows.

A logical clock ticks once per `match` or `insert`. Each call marks one root path as used at
its tick, so no two leaves ever share a last-used tick and the LRU choice needs no tie rule.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field


@dataclass(eq=False)
class Node:
    token: int | None  # None for the root, which holds no token
    parent: Node | None
    children: dict[int, Node] = field(default_factory=dict)
    last_used: int = 0


class PrefixCache:
    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.root = Node(None, None)
        self.clock = 0
        self.size = 0  # tokens stored: nodes other than the root

    def __len__(self) -> int:
        return self.size

    def match(self, tokens: Sequence[int]) -> int:
        """The length of the longest cached prefix of `tokens`; its tokens become used now."""
        self.clock += 1
        node, n = self.root, 0
        for t in tokens:
            child = node.children.get(t)
            if child is None:
                break
            child.last_used = self.clock
            node, n = child, n + 1
        return n

    def insert(self, tokens: Sequence[int]) -> int:
        """Store `tokens`, sharing the cached prefix; returns how many were new (before evicting)."""
        self.clock += 1
        node, new = self.root, 0
        for t in tokens:
            child = node.children.get(t)
            if child is None:
                child = node.children[t] = Node(t, node)
                new += 1
            child.last_used = self.clock
            node = child
        self.size += new
        while self.size > self.capacity:
            self._evict_one()
        return new

    def leaves(self) -> list[Node]:
        found, stack = [], list(self.root.children.values())
        while stack:
            node = stack.pop()
            if node.children:
                stack.extend(node.children.values())
            else:
                found.append(node)
        return found

    def _evict_one(self) -> None:
        victim = min(self.leaves(), key=lambda n: n.last_used)
        assert victim.parent is not None and victim.token is not None
        del victim.parent.children[victim.token]
        self.size -= 1

    def sequences(self) -> set[tuple[int, ...]]:
        """Every cached root path (each node's prefix): what a cache holding these tokens can match."""
        out: set[tuple[int, ...]] = set()
        stack: list[tuple[Node, tuple[int, ...]]] = [(self.root, ())]
        while stack:
            node, prefix = stack.pop()
            for t, child in node.children.items():
                out.add(prefix + (t,))
                stack.append((child, prefix + (t,)))
        return out

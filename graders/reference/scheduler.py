"""A continuous-batching scheduler with chunked prefill and preemption by recompute (continuous-batching).

One `schedule()` is one engine step, planned the way vLLM's V1 scheduler plans it, simplified:
a single token budget (`max_num_batched_tokens`) is shared by every request of the step, and a
request asks for `n_tokens - n_computed` tokens, so a decoding request asks for one and a
prefill asks for the rest of its prompt, cut to what the budget has left (chunked prefill:
Agrawal et al. 2023, "SARATHI", arXiv:2308.16369; the iteration-level batching of Orca, Yu et
al. 2022). The KV cache is paged (Kwon et al. 2023, arXiv:2309.06180): a request with
`n_computed` positions holds `ceil(n_computed / block_size)` blocks.

The order of a step:
  1. running requests, in the order they were admitted; when the blocks one needs are not free,
     the running request admitted last is preempted (blocks freed, `n_computed = 0`, outputs
     kept, to the front of the waiting queue) until they are, possibly the request itself;
  2. unless the step preempted, waiting requests front first, while fewer than `max_num_seqs`
     run and budget is left; the first that does not fit stops admission (FCFS).
Then every scheduled request computes its tokens; one whose cache reaches `n_tokens` emits one
output token; one with `max_new_tokens` outputs finishes and frees its blocks.

The step is split into small methods so the grader's known-mistake variants
(graders/checks/continuous_batching_variants.py) can each change one rule.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable
from dataclasses import dataclass


def blocks_for(n_positions: int, block_size: int) -> int:
    return -(-n_positions // block_size)  # ceil(n_positions / block_size)


@dataclass
class Request:
    req_id: Hashable
    prompt_len: int
    max_new_tokens: int
    n_tokens: int  # prompt plus the outputs so far
    n_computed: int = 0  # positions in the cache
    blocks: int = 0  # blocks held

    @property
    def outputs(self) -> int:
        return self.n_tokens - self.prompt_len


class Scheduler:
    def __init__(self, num_blocks: int, block_size: int, max_num_batched_tokens: int, max_num_seqs: int):
        self.num_blocks = num_blocks
        self.block_size = block_size
        self.max_num_batched_tokens = max_num_batched_tokens
        self.max_num_seqs = max_num_seqs
        self.free = num_blocks
        self.waiting: deque[Request] = deque()
        self.running: list[Request] = []  # admission order
        self._finished: list[Hashable] = []

    def add_request(self, req_id: Hashable, prompt_len: int, max_new_tokens: int) -> None:
        # The last output token is never fed back, so it needs no slot in the cache.
        if blocks_for(prompt_len + max_new_tokens - 1, self.block_size) > self.num_blocks:
            raise ValueError(
                f"request {req_id!r} needs {blocks_for(prompt_len + max_new_tokens - 1, self.block_size)} "
                f"blocks at its longest; the cache has {self.num_blocks}"
            )
        self.waiting.append(Request(req_id, prompt_len, max_new_tokens, n_tokens=prompt_len))

    def finished(self) -> list[Hashable]:
        return list(self._finished)

    def num_free_blocks(self) -> int:
        return self.free

    # --- one step -----------------------------------------------------------------------------------

    def schedule(self) -> list[tuple[Hashable, int]]:
        budget = [self.max_num_batched_tokens]  # a cell the helpers spend from
        plan: list[tuple[Request, int]] = []
        preempted = self._schedule_running(plan, budget)
        if not preempted:
            self._admit_waiting(plan, budget)
        self._advance(plan)
        return [(r.req_id, n) for r, n in plan]

    def needed(self, r: Request, n: int) -> int:
        """New blocks request r needs to compute n more positions."""
        return max(0, blocks_for(r.n_computed + n, self.block_size) - r.blocks)

    def asks(self, r: Request, budget: int) -> int:
        return min(r.n_tokens - r.n_computed, budget)

    def _schedule_running(self, plan: list[tuple[Request, int]], budget: list[int]) -> bool:
        preempted = False
        i = 0
        while i < len(self.running):
            if budget[0] <= 0:
                break
            r = self.running[i]
            n = self.asks(r, budget[0])
            while self.needed(r, n) > self.free:
                preempted = True
                victim = self.victim(r)
                self._preempt(victim)
                if victim is r:
                    break
            if r in self.running:
                self._allocate(r, n)
                plan.append((r, n))
                budget[0] -= n
                i += 1
        return preempted

    def victim(self, needing: Request) -> Request:
        """Whom to preempt when `needing` lacks blocks: the running request admitted last."""
        return self.running[-1]

    def _preempt(self, r: Request) -> None:
        self.running.remove(r)
        self.free += r.blocks
        r.blocks = 0
        r.n_computed = 0  # recompute: the outputs so far stay in n_tokens
        self.waiting.appendleft(r)

    def _allocate(self, r: Request, n: int) -> None:
        need = self.needed(r, n)
        self.free -= need
        r.blocks += need

    def _admit_waiting(self, plan: list[tuple[Request, int]], budget: list[int]) -> None:
        while self.waiting and len(self.running) < self.max_num_seqs and budget[0] > 0:
            r = self.waiting[0]
            n = self.asks(r, budget[0])
            if self.needed(r, n) > self.free:
                break  # first come, first served: nobody behind it goes first
            self.waiting.popleft()
            self.running.append(r)
            self._allocate(r, n)
            plan.append((r, n))
            budget[0] -= n

    def _advance(self, plan: list[tuple[Request, int]]) -> None:
        for r, n in plan:
            r.n_computed += n
            if r.n_computed == r.n_tokens:
                r.n_tokens += 1  # the step that completes the prompt (or a decode) emits one token
            if r.outputs >= r.max_new_tokens:
                self._finish(r)

    def _finish(self, r: Request) -> None:
        self.running.remove(r)
        self.free += r.blocks
        r.blocks = 0
        self._finished.append(r.req_id)

"""The continuous-batching scheduler's known mistakes: each one rule of the reference broken on purpose.

`Slip` names a mistake; `SlippedScheduler(slip, ...)` is graders.reference.scheduler.Scheduler
with that one rule changed. The battery replays a failing script on every slipped scheduler:
the one whose whole trace equals the submission's names the mistake, and its `REASONS` entry
is the rule the submission broke, said in the verdict after "because".
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from enum import Enum

from graders.reference.scheduler import Request, Scheduler, blocks_for


class Slip(Enum):
    WAITING_FIRST = "waiting requests are scheduled before running ones"
    BUDGET_NOT_SHARED = "every request gets the whole token budget"
    NO_CHUNKING = "a prompt longer than the budget left waits instead of being chunked"
    EARLY_OUTPUT = "every prefill chunk emits an output token"
    PREEMPTS_ITSELF = "the request that runs out of blocks is preempted instead of the last admitted"
    KEEPS_PROGRESS = "a preempted request keeps its n_computed"
    DROPS_OUTPUTS = "a preempted request loses its outputs"
    PREEMPTED_TO_BACK = "a preempted request goes to the back of the waiting queue"
    ADMITS_AFTER_PREEMPT = "a step that preempted still admits waiting requests"
    SKIPS_AHEAD = "a waiting request that does not fit is skipped and a later one admitted"
    IGNORES_MAX_SEQS = "more than max_num_seqs requests run at once"
    NEVER_FREES = "a finished request keeps its blocks"
    RESERVES_NEXT = "a block is reserved for the token the step emits"
    NO_VALUE_ERROR = "add_request accepts a request that can never fit"
    VALUE_ERROR_OFF_BY_ONE = "add_request refuses a request that fits"


# The rule each mistake breaks, as the verdict says it after "because".
REASONS: dict[Slip, str] = {
    Slip.WAITING_FIRST: "running requests come first, in the order they were admitted",
    Slip.BUDGET_NOT_SHARED: "max_num_batched_tokens is one budget shared by every request of the step",
    Slip.NO_CHUNKING: "a prompt is admitted with as many tokens as the budget allows (chunked prefill)",
    Slip.EARLY_OUTPUT: "only the step whose tokens complete the prompt (n_computed reaches n_tokens) "
    "emits an output token",
    Slip.PREEMPTS_ITSELF: "when blocks run out, the running request admitted last is preempted",
    Slip.KEEPS_PROGRESS: "preemption by recompute frees the blocks and sets n_computed = 0",
    Slip.DROPS_OUTPUTS: "a preempted request keeps its outputs and recomputes prompt and outputs",
    Slip.PREEMPTED_TO_BACK: "a preempted request goes back to the front of the waiting queue",
    Slip.ADMITS_AFTER_PREEMPT: "a step that preempted admits no waiting request",
    Slip.SKIPS_AHEAD: "the first waiting request that does not fit stops admission "
    "(first come, first served)",
    Slip.IGNORES_MAX_SEQS: "at most max_num_seqs requests run at once",
    Slip.NEVER_FREES: "a finished request frees its blocks",
    Slip.RESERVES_NEXT: "a request holds ceil(n_computed / block_size) blocks, "
    "no slot for the token it emits",
    Slip.NO_VALUE_ERROR: "add_request raises ValueError when "
    "ceil((prompt_len + max_new_tokens - 1) / block_size) > num_blocks",
    Slip.VALUE_ERROR_OFF_BY_ONE: "the last output token is never computed, so a request needs "
    "ceil((prompt_len + max_new_tokens - 1) / block_size) blocks, not one slot more",
}


def mistake_sentence(slip: Slip) -> str:
    """The diagnosis line: what the code does, then the rule."""
    return f"{slip.value}: {REASONS[slip]}"


class SlippedScheduler(Scheduler):
    """The reference scheduler with one rule broken (`slip`)."""

    def __init__(self, slip: Slip, num_blocks: int, block_size: int, max_tokens: int, max_seqs: int) -> None:
        super().__init__(num_blocks, block_size, max_tokens, max_seqs)
        self.slip = slip

    def add_request(self, req_id: Hashable, prompt_len: int, max_new_tokens: int) -> None:
        longest = {Slip.NO_VALUE_ERROR: 0, Slip.VALUE_ERROR_OFF_BY_ONE: prompt_len + max_new_tokens}
        if self.slip not in longest:
            return super().add_request(req_id, prompt_len, max_new_tokens)
        if blocks_for(longest[self.slip], self.block_size) > self.num_blocks:
            raise ValueError(f"request {req_id!r} does not fit")
        self.waiting.append(Request(req_id, prompt_len, max_new_tokens, n_tokens=prompt_len))

    def schedule(self) -> list[tuple[Hashable, int]]:
        if self.slip is not Slip.WAITING_FIRST:
            return super().schedule()
        budget = [self.max_num_batched_tokens]
        plan: list[tuple[Request, int]] = []
        before = list(self.running)
        self._admit_waiting(plan, budget)
        admitted = self.running[len(before) :]
        self.running = before  # the running loop sees only the requests that ran before this step
        self._schedule_running(plan, budget)
        self.running += [r for r in admitted if r not in self.running]
        self._advance(plan)
        return [(r.req_id, n) for r, n in plan]

    def needed(self, r: Request, n: int) -> int:
        extra = 1 if self.slip is Slip.RESERVES_NEXT else 0
        return max(0, blocks_for(r.n_computed + n + extra, self.block_size) - r.blocks)

    def asks(self, r: Request, budget: int) -> int:
        if self.slip is Slip.BUDGET_NOT_SHARED:
            return min(r.n_tokens - r.n_computed, self.max_num_batched_tokens)
        return super().asks(r, budget)

    def _schedule_running(self, plan: list[tuple[Request, int]], budget: list[int]) -> bool:
        if self.slip is Slip.BUDGET_NOT_SHARED:
            budget[0] = math.inf  # type: ignore[call-overload]  # nobody ever runs out
        preempted = super()._schedule_running(plan, budget)
        if self.slip is Slip.BUDGET_NOT_SHARED:
            budget[0] = self.max_num_batched_tokens
        return preempted and self.slip is not Slip.ADMITS_AFTER_PREEMPT

    def victim(self, needing: Request) -> Request:
        return needing if self.slip is Slip.PREEMPTS_ITSELF else super().victim(needing)

    def _preempt(self, r: Request) -> None:
        computed = r.n_computed
        super()._preempt(r)
        if self.slip is Slip.KEEPS_PROGRESS:
            r.n_computed = computed
            r.blocks = 0
        elif self.slip is Slip.DROPS_OUTPUTS:
            r.n_tokens = r.prompt_len
        elif self.slip is Slip.PREEMPTED_TO_BACK:
            self.waiting.remove(r)
            self.waiting.append(r)

    def _admit_waiting(self, plan: list[tuple[Request, int]], budget: list[int]) -> None:
        if self.slip not in (Slip.NO_CHUNKING, Slip.SKIPS_AHEAD, Slip.IGNORES_MAX_SEQS):
            return super()._admit_waiting(plan, budget)
        limit = math.inf if self.slip is Slip.IGNORES_MAX_SEQS else self.max_num_seqs
        for r in list(self.waiting):
            if len(self.running) >= limit or budget[0] <= 0:
                break
            n = self.asks(r, budget[0])
            whole = r.n_tokens - r.n_computed
            if (self.slip is Slip.NO_CHUNKING and n < whole) or self.needed(r, n) > self.free:
                if self.slip is Slip.SKIPS_AHEAD:
                    continue
                break
            self.waiting.remove(r)
            self.running.append(r)
            self._allocate(r, n)
            plan.append((r, n))
            budget[0] -= n

    def _advance(self, plan: list[tuple[Request, int]]) -> None:
        for r, n in plan:
            r.n_computed += n
            if r.n_computed == r.n_tokens or self.slip is Slip.EARLY_OUTPUT:
                r.n_tokens += 1
            if r.outputs >= r.max_new_tokens:
                self._finish(r)

    def _finish(self, r: Request) -> None:
        held = r.blocks
        super()._finish(r)
        if self.slip is Slip.NEVER_FREES:
            self.free -= held

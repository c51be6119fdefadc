"""Scripts of scheduler calls, their traces, a seeded generator of them, and the shrinker.

A *script* is a list of ops: `Add(req_id, prompt_len, max_new_tokens)` or `Step()`. Its *trace*
is one observation per op: None for an add that returned, "ValueError" for one that raised,
and for a step the triple (schedule()'s answer, finished(), num_free_blocks()). The battery
compares the submission's trace with the reference's op by op; a failing script is shrunk to
the shortest prefix, then the fewest ops, that still fails, before the verdict shows it.
"""

from __future__ import annotations

import random
import string
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from graders.reference.scheduler import Scheduler, blocks_for


@dataclass(frozen=True)
class Add:
    req_id: str
    prompt_len: int
    max_new_tokens: int

    def __str__(self) -> str:
        return f"add {self.req_id}({self.prompt_len}, {self.max_new_tokens})"


@dataclass(frozen=True)
class Step:
    def __str__(self) -> str:
        return "step"


Op = Add | Step
Plan = tuple[tuple[str, int], ...]
StepSeen = tuple[Plan, tuple[str, ...], int]  # schedule(), finished(), num_free_blocks()
Seen = None | str | StepSeen  # an add: None or "ValueError"; a step: StepSeen


@dataclass(frozen=True)
class Dims:
    num_blocks: int
    block_size: int
    max_num_batched_tokens: int
    max_num_seqs: int

    def args(self) -> tuple[int, int, int, int]:
        return (self.num_blocks, self.block_size, self.max_num_batched_tokens, self.max_num_seqs)

    def __str__(self) -> str:
        return (
            f"Scheduler(num_blocks={self.num_blocks}, block_size={self.block_size}, "
            f"max_num_batched_tokens={self.max_num_batched_tokens}, max_num_seqs={self.max_num_seqs})"
        )


def describe(ops: Sequence[Op]) -> str:
    return ", ".join(map(str, ops)) if ops else "no calls"


def plan_text(plan: Plan) -> str:
    return "[" + ", ".join(f"{r}: {n}" for r, n in plan) + "]"


def trace(make: Callable[[], Scheduler], ops: Sequence[Op]) -> list[Seen]:
    """The trace of a Python scheduler (the reference or a slipped one) on a script."""
    sched = make()
    seen: list[Seen] = []
    for op in ops:
        if isinstance(op, Add):
            try:
                sched.add_request(op.req_id, op.prompt_len, op.max_new_tokens)
                seen.append(None)
            except ValueError:
                seen.append("ValueError")
        else:
            plan = tuple((str(r), int(n)) for r, n in sched.schedule())
            seen.append((plan, tuple(map(str, sched.finished())), sched.num_free_blocks()))
    return seen


def req_name(i: int) -> str:
    letters = string.ascii_uppercase
    return letters[i] if i < len(letters) else letters[i // len(letters) - 1] + letters[i % len(letters)]


def random_dims(py: random.Random) -> Dims:
    """Tight budgets: few blocks, small token budgets, so preemption and chunking happen often."""
    block_size = py.choice([2, 3, 4])
    return Dims(
        num_blocks=py.randint(4, 9),
        block_size=block_size,
        max_num_batched_tokens=py.choice([3, 4, 5, 6, 8]),
        max_num_seqs=py.choice([2, 3, 4]),
    )


def random_script(py: random.Random, dims: Dims, n_requests: int, n_ops: int) -> list[Op]:
    """Arrivals spread among steps; every request fits the cache alone (no ValueError here)."""
    room = dims.num_blocks * dims.block_size  # prompt_len + max_new_tokens - 1 <= room
    ops: list[Op] = []
    added = 0
    while len(ops) < n_ops or added < n_requests:
        if added < n_requests and (py.random() < 0.35 or len(ops) >= n_ops):
            longest = py.randint(2, room)
            prompt = py.randint(1, longest)
            ops.append(Add(req_name(added), prompt, longest - prompt + 1))
            assert blocks_for(prompt + longest - prompt, dims.block_size) <= dims.num_blocks
            added += 1
        else:
            ops.append(Step())
    return ops + [Step()] * py.randint(4, 12)


def shrink(ops: list[Op], fails: Callable[[list[Op]], int | None], budget: int = 40) -> list[Op]:
    """A shorter script that still fails: the failing prefix, then ops removed one chunk at a time.

    `fails` runs a candidate script on a fresh submission object and returns the index of its
    first differing op (None: it passes); `budget` caps how many candidates are tried (each
    costs two round trips to the sandbox)."""
    first = fails(list(ops))
    current = list(ops) if first is None else list(ops[: first + 1])
    chunk = max(1, len(current) // 2)
    while chunk >= 1 and budget > 0:
        i = 0
        removed = False
        while i < len(current) and budget > 0:
            candidate = current[:i] + current[i + chunk :]
            if not any(isinstance(op, Step) for op in candidate):
                i += chunk
                continue
            budget -= 1
            at = fails(candidate)
            if at is not None:
                current, removed = candidate[: at + 1], True
            else:
                i += chunk
        if not removed:
            chunk //= 2
    return current

"""Replaying a script on the submission's Scheduler beside the reference, and saying why they part.

`Replayer.check(dims, ops)` runs the whole script on a fresh submission object in one round trip
after the constructor (every call queued), compares the trace op by op with the reference's,
and on a difference shrinks the script (graders/checks/continuous_batching_script.py), replays
the shrunk one on every known-mistake variant to name the mistake, and fails the test with
"after add A(3, 3), step, ...: you scheduled [B: 4], the rule schedules [A: 1, B: 3], because
running requests come first, in the order they were admitted".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from graders.checks.continuous_batching_script import (
    Add,
    Dims,
    Op,
    Seen,
    Step,
    describe,
    plan_text,
    shrink,
    trace,
)
from graders.checks.continuous_batching_variants import REASONS, Slip, SlippedScheduler, mistake_sentence
from graders.checks.report import CheckReport, Mismatch
from graders.checks.traces import first_difference
from graders.reference.scheduler import Scheduler
from graders.sandbox.protocol import Pending, SubmissionError, SubmissionLink
from graders.wording import exception_text

ENTRY_POINT = "Scheduler"


class Raised:
    """The submission raised at this op: every later op of the script was never made."""

    def __init__(self, call: str, exc: SubmissionError) -> None:
        self.text = f"{call} raised {exception_text(exc.type_name, exc.message[:120])}"
        self.type_name = exc.type_name


class Malformed:
    """An answer of the wrong shape; never equal to an observation."""

    def __init__(self, text: str) -> None:
        self.text = text


def reference_trace(dims: Dims, ops: Sequence[Op]) -> list[Seen]:
    return trace(lambda: Scheduler(*dims.args()), ops)


def variant_trace(slip: Slip, dims: Dims, ops: Sequence[Op]) -> list[Seen]:
    return trace(lambda: SlippedScheduler(slip, *dims.args()), ops)


def _plan(value: Any) -> tuple[tuple[str, int], ...] | Malformed:
    if not isinstance(value, list | tuple):
        return Malformed(f"schedule() should return a list of (req_id, n) pairs, got {type(value).__name__}")
    pairs = []
    for item in value:
        if (
            not isinstance(item, list | tuple)
            or len(item) != 2
            or type(item[0]) is not str
            or type(item[1]) is not int
        ):
            return Malformed(f"schedule() should return (req_id, n) pairs with n an int, got {item!r:.80}")
        pairs.append((item[0], item[1]))
    return tuple(pairs)


def _finished(value: Any) -> tuple[str, ...] | Malformed:
    if not isinstance(value, list | tuple) or not all(type(r) is str for r in value):
        return Malformed(f"finished() should return a list of the request ids, got {value!r:.80}")
    return tuple(value)


def _free(value: Any) -> int | Malformed:
    if type(value) is not int:
        return Malformed(f"num_free_blocks() should return an int, got {type(value).__name__}")
    return value


class Replayer:
    def __init__(self, report: CheckReport, session: SubmissionLink) -> None:
        self.report, self.session = report, session
        self.round_trips = 0

    def submission_trace(self, dims: Dims, ops: Sequence[Op]) -> list[Any]:
        """The submission's trace; it stops at the first op that raised (a Raised) or answered wrongly."""
        if not self.session.has(ENTRY_POINT):
            raise Mismatch("define class Scheduler at the top level of your file")
        self.round_trips += 2
        try:
            sched = self.session.call(ENTRY_POINT, *dims.args(), keep=True)
        except SubmissionError as exc:
            return [Raised(f"{dims}", exc)]
        queued: list[tuple[Op, list[Pending]]] = []
        for op in ops:
            if isinstance(op, Add):
                call = self.session.call_later(sched.add_request, op.req_id, op.prompt_len, op.max_new_tokens)
                queued.append((op, [call]))
            else:
                names = ("schedule", "finished", "num_free_blocks")
                queued.append((op, [self.session.call_later(getattr(sched, n)) for n in names]))
        seen: list[Any] = []
        for op, calls in queued:
            try:
                if isinstance(op, Add):
                    try:
                        calls[0].value()
                        seen.append(None)
                    except SubmissionError as exc:  # later queued calls were never made
                        refused = exc.type_name == "ValueError"
                        seen.append(
                            "ValueError" if refused else Raised(f"add_request({op.req_id!r}, ...)", exc)
                        )
                        break
                    continue
                which = "schedule()"
                plan = _plan(calls[0].value())
                which = "finished()"
                done = _finished(calls[1].value())
                which = "num_free_blocks()"
                free = _free(calls[2].value())
            except SubmissionError as exc:
                seen.append(Raised(f"your {which}", exc))
                break
            bad = next((x for x in (plan, done, free) if isinstance(x, Malformed)), None)
            if bad is not None:
                seen.append(bad)
                break
            seen.append((plan, done, free))
        return seen

    def fails(self, dims: Dims, ops: Sequence[Op]) -> int | None:
        return first_difference(self.submission_trace(dims, ops), reference_trace(dims, ops))

    def check(self, dims: Dims, ops: Sequence[Op], shrink_budget: int = 40) -> None:
        """The whole trace equals the reference's; else a Mismatch with the shrunk script and the rule."""
        got = self.submission_trace(dims, ops)
        want = reference_trace(dims, ops)
        at = first_difference(got, want)
        if at is None:
            return
        slip = self._slip(dims, ops, got)
        small = shrink(list(ops), lambda c: self.fails(dims, c), shrink_budget)
        small_got = self.submission_trace(dims, small)
        small_want = reference_trace(dims, small)
        small_at = first_difference(small_got, small_want)
        if small_at is None:  # a submission that answers differently each time: show the original
            small, small_got, small_want, small_at = list(ops), got, want, at
        slip = self._slip(dims, small, small_got) or slip
        if slip is not None:
            self.report.diagnose(mistake_sentence(slip))
        reason = REASONS[slip] if slip is not None else self._reason(dims, small, small_at, small_got)
        raise Mismatch(
            f"{dims}, after {describe(small[: small_at + 1])}: "
            f"{_difference(small[small_at], small_got, small_want[small_at], small_at)}, because {reason}"
        )

    def _slip(self, dims: Dims, ops: Sequence[Op], got: list[Any]) -> Slip | None:
        """The known mistake whose whole trace is the submission's, if one is."""
        if len(got) != len(ops) or any(isinstance(g, Raised | Malformed) for g in got):
            return None
        return next((s for s in Slip if variant_trace(s, dims, ops) == got), None)

    def _reason(self, dims: Dims, ops: Sequence[Op], at: int, got: list[Any]) -> str:
        """The rule a difference no known mistake explains breaks, read off the reference's state."""
        seen = got[at] if at < len(got) else None
        if not isinstance(ops[at], Step) or not isinstance(seen, tuple):
            return "that is what the rules give at this point"
        plan = seen[0]
        ref = Scheduler(*dims.args())
        for op in ops[:at]:
            if isinstance(op, Add):
                ref.add_request(op.req_id, op.prompt_len, op.max_new_tokens)
            else:
                ref.schedule()
        running = {r.req_id: r for r in ref.running}
        waiting = {r.req_id: r for r in ref.waiting}
        if sum(n for _, n in plan) > dims.max_num_batched_tokens:
            return REASONS[Slip.BUDGET_NOT_SHARED]
        if len(plan) > dims.max_num_seqs:
            return REASONS[Slip.IGNORES_MAX_SEQS]
        order = [r in running for r, _ in plan]
        if order != sorted(order, reverse=True):
            return REASONS[Slip.WAITING_FIRST]
        for r, n in plan:
            req = running.get(r) or waiting.get(r)
            if req is not None and n > req.n_tokens - req.n_computed:
                return f"request {r} asks for n_tokens - n_computed = {req.n_tokens - req.n_computed} tokens"
        return (
            "the rules give that at this step: running requests first in admission order, preempting the "
            "last admitted when blocks run out, then waiting ones front first, one shared budget"
        )


def _difference(op: Op, got: list[Any], want: Seen, at: int) -> str:
    seen = got[at] if at < len(got) else None
    if isinstance(seen, Raised | Malformed):
        rule = plan_text(want[0]) if isinstance(want, tuple) else "returns"
        return f"{seen.text}, the rule {'schedules ' + rule if isinstance(want, tuple) else rule}"
    if isinstance(op, Add):
        if want == "ValueError":
            return (
                f"add_request({op.req_id!r}, {op.prompt_len}, {op.max_new_tokens}) did not raise ValueError"
            )
        return f"add_request({op.req_id!r}, {op.prompt_len}, {op.max_new_tokens}) raised, the rule accepts it"
    assert isinstance(want, tuple) and isinstance(seen, tuple)
    if seen[0] != want[0]:
        return f"you scheduled {plan_text(seen[0])}, the rule schedules {plan_text(want[0])}"
    if seen[1] != want[1]:
        return f"finished() is {list(seen[1])}, the rule's is {list(want[1])}"
    return f"num_free_blocks() is {seen[2]}, the rule's is {want[2]}"

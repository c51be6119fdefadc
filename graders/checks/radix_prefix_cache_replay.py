"""Replaying a script on the submission's PrefixCache beside the reference, and saying why they part.

`Replayer.check(capacity, ops)` runs the whole script on a fresh submission object in one round
trip after the constructor (every call queued, `len` after each), compares the trace op by op
with the reference's, and on a difference shrinks the script
(graders/checks/radix_prefix_cache_script.py), replays the shrunk one on every known-mistake
variant to name the mistake, and fails the test with "PrefixCache(capacity=3), after insert
[1, 2, 3], insert [4], match [1, 2, 3]: match returned 0, the rule's answer is 2, because only a
leaf token ... is evicted; the rule's cache then held [1, 2], [4]".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from graders.checks.radix_prefix_cache_script import (
    Insert,
    Match,
    Op,
    Seen,
    describe,
    shrink,
    trace,
)
from graders.checks.radix_prefix_cache_variants import REASONS, Slip, SlippedCache, mistake_sentence
from graders.checks.report import CheckReport, Mismatch
from graders.checks.traces import first_difference
from graders.reference.prefix_cache import PrefixCache
from graders.sandbox.protocol import Handle, Pending, SubmissionError, SubmissionLink
from graders.wording import exception_text

ENTRY_POINT = "PrefixCache"


class Raised:
    """The submission raised at this op: every later op of the script was never made."""

    def __init__(self, call: str, exc: SubmissionError) -> None:
        self.text = f"{call} raised {exception_text(exc.type_name, exc.message[:120])}"


class Malformed:
    """An answer of the wrong type; never equal to an observation."""

    def __init__(self, text: str) -> None:
        self.text = text


def reference_trace(capacity: int, ops: Sequence[Op]) -> list[Seen]:
    return trace(lambda: PrefixCache(capacity), ops)


def variant_trace(slip: Slip, capacity: int, ops: Sequence[Op]) -> list[Seen]:
    return trace(lambda: SlippedCache(slip, capacity), ops)


def header(capacity: int) -> str:
    return f"PrefixCache(capacity={capacity})"


def held(capacity: int, ops: Sequence[Op]) -> str:
    """The sequences (root-to-leaf paths) the reference holds after `ops`, as the verdict shows them."""
    cache = PrefixCache(capacity)
    trace(lambda: cache, ops)
    paths = sorted(p for p in cache.sequences() if not any(len(q) == len(p) + 1 and q[:-1] == p
                                                          for q in cache.sequences()))  # fmt: skip
    return ", ".join(str(list(p)) for p in paths) if paths else "nothing"


class Replayer:
    def __init__(self, report: CheckReport, session: SubmissionLink) -> None:
        self.report, self.session = report, session
        self.defined: bool | None = None  # asked once: each question is a round trip

    def submission_trace(self, capacity: int, ops: Sequence[Op]) -> list[Any]:
        """The submission's trace; it stops at the first call that raised (a Raised) or answered wrongly."""
        if self.defined is None:
            self.defined = self.session.has(ENTRY_POINT)
        if not self.defined:
            raise Mismatch("define class PrefixCache at the top level of your file")
        try:
            cache = self.session.call(ENTRY_POINT, capacity, keep=True)
        except SubmissionError as exc:
            return [Raised(header(capacity), exc)]
        size = Handle(cache.id, "__len__")  # Handle's attribute access refuses dunder names
        queued: list[tuple[Op, Pending, Pending]] = []
        for op in ops:
            method = cache.match if isinstance(op, Match) else cache.insert
            queued.append(
                (op, self.session.call_later(method, list(op.tokens)), self.session.call_later(size))
            )
        seen: list[Any] = []
        for op, answer, length in queued:
            which = f"your {op}"
            try:
                value = answer.value()
                which = f"len(cache) after {op}"
                n = length.value()
            except SubmissionError as exc:
                seen.append(Raised(which, exc))
                break
            name = "match" if isinstance(op, Match) else "insert"
            if type(value) is not int:
                seen.append(
                    Malformed(f"{name} should return an int, got {type(value).__name__}: {value!r:.60}")
                )
                break
            if type(n) is not int:
                seen.append(Malformed(f"__len__ should return an int, got {type(n).__name__}"))
                break
            seen.append((value, n))
        return seen

    def fails(self, capacity: int, ops: Sequence[Op]) -> int | None:
        return first_difference(self.submission_trace(capacity, ops), reference_trace(capacity, ops))

    def check(self, capacity: int, ops: Sequence[Op], shrink_budget: int = 40) -> None:
        """The whole trace equals the reference's; else a Mismatch with the shrunk script and the rule."""
        got = self.submission_trace(capacity, ops)
        want = reference_trace(capacity, ops)
        at = first_difference(got, want)
        if at is None:
            return
        small = shrink(list(ops), lambda c: self.fails(capacity, c), shrink_budget)
        small_got = self.submission_trace(capacity, small)
        small_want = reference_trace(capacity, small)
        small_at = first_difference(small_got, small_want)
        if small_at is None:  # a submission that answers differently each time: show the original
            small, small_got, small_want, small_at = list(ops), got, want, at
        slip = self._slip(capacity, ops, got, small, small_got)
        if slip is not None:
            self.report.diagnose(mistake_sentence(slip))
        broken = small_at < len(small_got) and isinstance(small_got[small_at], Raised | Malformed)
        reason = REASONS[slip] if slip is not None else _reason(capacity, small, small_at, small_got)
        because = "" if broken else f", because {reason}"  # a crash or a wrong type needs no rule
        raise Mismatch(
            f"{header(capacity)}, after {describe(small[: small_at + 1])}: "
            f"{_difference(small[small_at], small_got, small_want[small_at], small_at)}{because}; "
            f"the rule's cache then held {held(capacity, small[: small_at + 1])}"
        )

    def _slip(
        self, capacity: int, ops: Sequence[Op], got: list[Any], small: Sequence[Op], small_got: list[Any]
    ) -> Slip | None:
        """The known mistake whose whole traces are the submission's, on the script and its shrunk
        form (the longer script tells mistakes apart that a short one may not)."""

        def whole(trace_got: list[Any], script: Sequence[Op]) -> bool:
            return len(trace_got) == len(script) and not any(
                isinstance(g, Raised | Malformed) for g in trace_got
            )

        if not whole(got, ops):
            return None
        found = [s for s in Slip if variant_trace(s, capacity, ops) == got]
        if whole(small_got, small):
            found = [s for s in found if variant_trace(s, capacity, small) == small_got] or found
        return found[0] if found else None


def _reason(capacity: int, ops: Sequence[Op], at: int, got: list[Any]) -> str:
    """The rule a difference no known mistake explains breaks, read off the reference's state."""
    ref = PrefixCache(capacity)
    trace(lambda: ref, ops[:at])
    cached, op = ref.sequences(), ops[at]
    shared = 0
    while shared < len(op.tokens) and op.tokens[: shared + 1] in cached:
        shared += 1
    answer_differs = (
        at < len(got)
        and isinstance(got[at], tuple)
        and got[at][0] != reference_trace(capacity, ops[: at + 1])[at][0]
    )
    if isinstance(op, Match):
        if answer_differs:
            return f"the rule's cache held {list(op.tokens[:shared])} of it: the longest cached prefix"
        return "match stores and evicts nothing"
    new = len(op.tokens) - shared
    if answer_differs:
        return (
            f"the rule's cache already held {list(op.tokens[:shared])} of it, so {new} tokens were new "
            "(counted before any eviction)"
        )
    over = len(ref) + new - capacity
    if over > 0:
        return (
            f"storing them made {len(ref) + new} tokens, {over} over capacity: that many leaf tokens go, "
            "the least recently used first, one at a time"
        )
    return f"{len(ref) + new} tokens fit in capacity {capacity}: nothing is evicted"


def _difference(op: Op, got: list[Any], want: Seen, at: int) -> str:
    seen = got[at] if at < len(got) else None
    name = "match" if isinstance(op, Match) else "insert"
    if isinstance(seen, Raised | Malformed):
        return f"{seen.text}, the rule's answer is {want[0]} with len {want[1]}"
    assert isinstance(seen, tuple) and isinstance(op, Match | Insert)
    if seen[0] != want[0]:
        return f"{name} returned {seen[0]}, the rule's answer is {want[0]}"
    return f"len(cache) is {seen[1]} after it, the rule's is {want[1]}"

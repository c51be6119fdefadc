"""The protocol a challenge's checks drive a submission through (the `SubmissionLink` protocol).

A check never touches the submission's objects directly. It talks to a *link* (a
`SubmissionLink`, named apart from the database session): every argument crosses the boundary
as data (tensors, arrays, numbers, strings and containers of them) and every result comes back
as data the grader decodes itself. Objects that are not plain data (a module instance, a cache
object, a dict the check wants to keep on the other side) stay in the submission's process and
come back as a `Handle` the check can pass back in later calls.

Two backends implement it:
- `graders.sandbox.submission_process.SandboxLink` (the real one): a forked, isolated child
  of the fork server (graders/sandbox/forkserver/__main__.py).
- `graders.sandbox.inprocess`: the same semantics in the test process, for unit
  tests of the checks only. It isolates nothing and is never used to grade.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    from graders.sandbox.outside import PeakWatch

Keep = bool | Literal["both"]  # SubmissionLink.call: send the result, keep it (a Handle), or both


@dataclass(frozen=True)
class Handle:
    """An object that lives in the submission's process; `attr` selects a bound attribute."""

    id: int
    attr: str | None = None

    def __getattr__(self, name: str) -> Handle:
        # Handle(3).update -> Handle(3, "update"): lets checks write session.call(cache.update, ...)
        if name.startswith("__"):
            raise AttributeError(name)
        if self.attr is not None:
            raise AttributeError(f"nested attribute {self.attr}.{name} is not supported")
        return Handle(self.id, name)


class SubmissionError(Exception):
    """The submission's code raised; carries the exception's type name and message."""

    def __init__(self, type_name: str, message: str) -> None:
        super().__init__(f"{type_name}: {message}" if message else type_name)
        self.type_name = type_name
        self.message = message


class LoadError(Exception):
    """The submission could not be loaded (syntax error, import error, top-level raise)."""


class LimitExceeded(Exception):
    """A limit stopped the submission; `verdict` is "timeout", "memory_limit" or "error"."""

    def __init__(self, verdict: str, message: str) -> None:
        super().__init__(message)
        self.verdict = verdict
        self.message = message


class Pending:
    """The answer to a call sent later (`SubmissionLink.call_later`): `value()` has it once it is in.

    `value()` returns what `call` would have returned, or raises what it would have raised; a
    call queued after one that raised was never made and raises that same exception.
    """

    def __init__(
        self, flush: Callable[[], None] | None = None, unpack: Callable[[Any], Any] | None = None
    ) -> None:
        self._flush = flush  # sends what is queued, this call included (None: already answered)
        self._unpack = unpack  # checks and splits the raw answer (a measured call's [result, largest])
        self._done = False
        self._value: Any = None
        self._error: BaseException | None = None

    def resolve(self, value: Any) -> None:
        self._done, self._value = True, value

    def reject(self, error: BaseException) -> None:
        self._done, self._error = True, error

    @property
    def done(self) -> bool:
        return self._done

    def value(self) -> Any:
        if not self._done and self._flush is not None:
            self._flush()
        if self._error is not None:
            raise self._error
        if not self._done:
            raise RuntimeError("the call was never answered")
        return self._value if self._unpack is None else self._unpack(self._value)


def measured_reply(value: Any) -> tuple[Any, int]:
    """Split a measured call's reply, [result, largest]; a malformed one is the submission's error."""
    if type(value) is list and len(value) == 2 and type(value[1]) is int and value[1] >= 0:
        return value[0], value[1]
    raise SubmissionError("RuntimeError", "the measured call's reply was tampered with")


def counted_reply(value: Any) -> tuple[Any, int, int]:
    """Split a counted call's reply, [result, largest, multiply-adds]; a malformed one is an error."""
    if type(value) is list and len(value) == 3 and all(type(n) is int and n >= 0 for n in value[1:]):
        return value[0], value[1], value[2]
    raise SubmissionError("RuntimeError", "the counted call's reply was tampered with")


def storages_reply(value: Any) -> list[tuple[int, int]]:
    """Check a storages reply: a list of [data_ptr, nbytes] pairs of ints."""
    if type(value) is list and all(
        type(p) is list and len(p) == 2 and all(type(n) is int and n >= 0 for n in p) for p in value
    ):
        return [(p[0], p[1]) for p in value]
    raise SubmissionError("RuntimeError", "the storages reply was tampered with")


class SubmissionLink(Protocol):
    def has(self, name: str) -> bool:
        """True when the submission's module defines `name` at top level."""

    def call(
        self,
        target: str | Handle,
        *args: Any,
        keep: Keep = False,
        memory_error_is_data: bool = False,
        **kwargs: Any,
    ) -> Any:
        """Call a top-level function or class by name, or a Handle (or a Handle's attribute).

        The result comes back decoded as data; with keep=True, or when it is not
        plain data, it stays on the other side and a Handle comes back instead; with
        keep="both" it stays there and comes back too, as (Handle, value).
        Raises SubmissionError when the submission's code raises. A MemoryError ends the
        session at the memory limit, unless memory_error_is_data: then it is an answer like
        any other exception (a paged cache must raise it when its blocks run out).
        """

    def call_later(
        self,
        target: str | Handle,
        *args: Any,
        keep: Keep = False,
        memory_error_is_data: bool = False,
        **kwargs: Any,
    ) -> Pending:
        """`call`, queued: it goes out with the next request (or the first `value()` of one), so a
        check can queue every step of a test and pay one round trip for all of them. `keep` and
        `memory_error_is_data` as for `call` (a Handle comes with the answer: a later call cannot
        name it before then)."""

    def call_measured(
        self, target: str | Handle, *args: Any, keep: bool = False, kept_heap: bool = False, **kwargs: Any
    ) -> tuple[Any, int]:
        """`call`, measured: (result, the most floating-point elements any one tensor or NumPy array
        the call allocated held). See graders/sandbox/footprint.py for what it counts.
        `kept_heap`: the submission's allocator keeps freed blocks for reuse during the call
        (graders/sandbox/allocator.py), so a loop of large temporaries costs no page faults."""

    def call_measured_later(self, target: str | Handle, *args: Any, **kwargs: Any) -> Pending:
        """`call_measured`, queued as `call_later` queues `call`: `value()` is (result, largest), so
        every measured step of a test goes out in one round trip."""

    def peak_watch(self) -> PeakWatch | None:
        """A `with` block measuring the kernel's peak of the submission process's resident memory,
        above what it held before its code was loaded (graders/sandbox/outside.py); None where it
        cannot be measured from outside (the in-process backend, no /proc)."""

    def cpu_seconds(self) -> float | None:
        """User + system CPU seconds the submission's process has used so far, read by the kernel
        from outside it (graders/sandbox/outside.py); None where it cannot be measured apart."""

    def call_counted(self, target: str | Handle, *args: Any, **kwargs: Any) -> tuple[Any, int, int]:
        """`call`, counted: (result, its largest floating-point tensor or NumPy array, the multiply-adds
        of its matrix products). See graders/sandbox/work_counter.py (and numpy_work_counter.py, for
        NumPy arguments) for what it counts."""

    def call_and_storages(self, target: Handle, *args: Any, of: Handle) -> tuple[Any, list[tuple[int, int]]]:
        """`call(target, *args)`, then `storages(of)`, in one round trip."""

    def storages(self, handle: Handle) -> list[tuple[int, int]]:
        """(data_ptr, nbytes) of every tensor storage the object behind `handle` holds."""

    def new_dict(self, initial: dict[str, Any] | None = None) -> Handle:
        """Create a dict in the submission's process (for example an empty cache).

        Like setitem, the sandbox sends it with the next request: an error it causes is raised there.
        """

    def get(self, handle: Handle) -> Any:
        """Decode the current value of a handle (a dict of tensors, a kept tensor, ...)."""

    def setitem(self, handle: Handle, key: str | int, value: Any) -> None:
        """handle[key] = value on the other side (used to corrupt a cache on purpose).

        The sandbox sends it with the next request, in one round trip (an error it causes, such
        as an object that refuses the item, is raised by that request).
        """

    def output(self) -> str:
        """A capped excerpt of what the submission printed so far."""

    def close(self) -> None:
        """End the submission's process and everything it started."""

"""Objects the grader keeps on its own side that a submission may call back: `Remote`.

Some challenges hand the submission something to call rather than data to read: beam-search's
model (`prefill`, `step`, `reorder`) is the grader's, so that every call the search makes is
counted and checked where the submission cannot reach it. A check wraps such an object in
`Remote(obj, methods)` and passes it as an argument like any other value:

- in the sandbox the child gets a `RemoteProxy`: calling one of `methods` on it sends a
  "callback" frame back over the child's socket while the grader waits for the call's reply
  (graders/sandbox/submission_process.py answers it with `RemoteTable.answer` and goes on
  waiting); the call's arguments cross as data, exactly like a request's, and its result comes
  back as data (graders/sandbox/wire.py). An object the grader's method returns wrapped in
  `Remote` (beam-search's cache, with no methods) reaches the child as another proxy: an opaque
  reference it can only hand back in a later callback, where it is resolved to the same object.
- in-process (graders/sandbox/inprocess.py) the same proxy semantics run in one interpreter:
  tensors are copied both ways, so neither side holds the other's objects.

What it protects: the object, its counters and its state never enter the submission's process,
so a submission cannot patch them, read them or forge what they record; it can only call the
named methods with data, and a reference it made up is refused. What it does not: a method is
the grader's own code running on the submission's data, so it must check its arguments like any
input (beam-search's model refuses wrong shapes, dtypes and caches it never gave out, and keeps
a record of the refusal the battery reads even when the submission swallows the exception).
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

# The exception types a refused callback raises in the submission by name (anything else, and any
# name a grader's method did not raise, arrives as RuntimeError naming the type).
RAISED_AS = ("ValueError", "TypeError", "IndexError", "KeyError", "RuntimeError", "AttributeError")
MAX_METHODS = 16


@dataclass(frozen=True, eq=False)
class Remote:
    """A grader-side object the submission may call: only `methods`, only with data.

    eq=False: two Remotes are the same reference only when they are the same object (the table
    gives one id per Remote object, so a proxy handed back resolves to exactly this one)."""

    obj: Any
    methods: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        if len(self.methods) > MAX_METHODS or not all(
            type(m) is str and m.isidentifier() and not m.startswith("_") for m in self.methods
        ):
            raise ValueError(f"a Remote's methods must be public identifiers, got {self.methods!r}")


class RemoteCallError(Exception):
    """A callback the grader's side refused or whose method raised: (type name, message)."""

    def __init__(self, type_name: str, message: str) -> None:
        super().__init__(f"{type_name}: {message}")
        self.type_name = type_name
        self.message = message


class RemoteTable:
    """The grader's side: every Remote sent to one submission, by the id the child knows it by."""

    def __init__(self) -> None:
        self._by_id: dict[int, Remote] = {}
        self._ids: dict[int, int] = {}  # id(Remote) -> its id here
        self.callbacks = 0  # answered, for graders/bench.py

    def register(self, remote: Remote) -> int:
        known = self._ids.get(id(remote))
        if known is not None and self._by_id[known] is remote:
            return known
        rid = len(self._by_id) + 1
        self._by_id[rid] = remote
        self._ids[id(remote)] = rid
        return rid

    def resolve(self, rid: Any) -> Any:
        """The object behind an id the child sent; RemoteCallError for one never given out."""
        remote = self._by_id.get(rid) if type(rid) is int else None
        if remote is None:
            raise RemoteCallError("ValueError", f"no object of the grader's has the reference {rid!r}")
        return remote.obj

    def method(self, rid: Any, name: Any) -> Callable[..., Any]:
        remote = self._by_id.get(rid) if type(rid) is int else None
        if remote is None:
            raise RemoteCallError("ValueError", f"no object of the grader's has the reference {rid!r}")
        if type(name) is not str or name not in remote.methods:
            offered = ", ".join(remote.methods) or "nothing"
            raise RemoteCallError("AttributeError", f"the grader's object offers {offered}, not {name!r}")
        return getattr(remote.obj, name)  # type: ignore[no-any-return]

    def call(self, rid: Any, name: Any, args: Any, kwargs: Any) -> Any:
        """Run one callback; RemoteCallError carries a refusal or what the method raised."""
        fn = self.method(rid, name)
        if type(args) is not list or type(kwargs) is not dict or not all(type(k) is str for k in kwargs):
            raise RemoteCallError("TypeError", "a callback's arguments must be a list and a dict")
        self.callbacks += 1
        try:
            return fn(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - the grader's method refusing its input is an answer
            raise RemoteCallError(type(exc).__name__, str(exc)[:2000]) from None


def raised_in_submission(type_name: str, message: str) -> Exception:
    """The exception a proxy raises for a refused callback: the same builtin type where allowed."""
    if type_name in RAISED_AS:
        kind = getattr(builtins, type_name)
        return kind(message)  # type: ignore[no-any-return]
    return RuntimeError(f"{type_name}: {message}")


class RemoteProxy:
    """The submission's view of a Remote: its methods, each a callback through `channel`.

    `channel(rid, method, args, kwargs)` sends the call and returns its decoded result (or raises
    what the grader's side answered). A proxy with no methods is an opaque reference."""

    __slots__ = ("_channel", "_methods", "_rid")

    def __init__(self, channel: Callable[[int, str, tuple[Any, ...], dict[str, Any]], Any], rid: int,
                 methods: tuple[str, ...]) -> None:  # fmt: skip
        object.__setattr__(self, "_channel", channel)
        object.__setattr__(self, "_rid", rid)
        object.__setattr__(self, "_methods", methods)

    @property
    def remote_id(self) -> int:
        return self._rid  # type: ignore[no-any-return]

    def __getattr__(self, name: str) -> Any:
        if name in self._methods:
            channel, rid = self._channel, self._rid

            def method(*args: Any, **kwargs: Any) -> Any:
                return channel(rid, name, args, kwargs)

            method.__name__ = name
            return method
        offered = ", ".join(self._methods) or "nothing (it is a reference to hand back)"
        raise AttributeError(f"the grader's object offers {offered}, not {name!r}")

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("the grader's object cannot be changed from here")

    def __repr__(self) -> str:
        what = f"methods {', '.join(self._methods)}" if self._methods else "a reference"
        return f"<the grader's object #{self._rid}: {what}>"

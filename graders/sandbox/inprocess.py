"""An in-process SubmissionLink with the same copy semantics as the sandbox, for unit tests.

It isolates NOTHING: the submission runs in the caller's interpreter. It exists so
the checks can be tested quickly against known-good and known-bad code; real
grading always goes through the fork server.
"""

from __future__ import annotations

import contextlib
import io
import types
from typing import Any

import numpy as np
import torch

from graders.sandbox.protocol import Handle, Keep, LoadError, Pending, SubmissionError
from graders.sandbox.remote import Remote, RemoteCallError, RemoteProxy, RemoteTable, raised_in_submission
from graders.wording import describe

_PLAIN_SCALARS = (type(None), bool, int, float, str, torch.dtype)  # dtypes: as the wire allows


def _to_wire(value: Any, objects: dict[int, Any], proxy: Any = None) -> Any:
    """Copy a check's argument into the submission's world (resolving handles; a Remote becomes
    `proxy(remote)`, the submission's RemoteProxy of it)."""
    if isinstance(value, Remote) and proxy is not None:
        return proxy(value)
    if isinstance(value, Handle):
        obj = objects[value.id]
        return getattr(obj, value.attr) if value.attr else obj
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, list):
        return [_to_wire(v, objects, proxy) for v in value]
    if isinstance(value, tuple):
        return tuple(_to_wire(v, objects, proxy) for v in value)
    if isinstance(value, dict):
        return {k: _to_wire(v, objects, proxy) for k, v in value.items()}
    if isinstance(value, (*_PLAIN_SCALARS, torch.dtype)):
        return value
    raise TypeError(f"cannot send {type(value).__name__} to a submission")


class InProcessLink:
    def __init__(self, code: str, filename: str = "submission.py") -> None:
        self._objects: dict[int, Any] = {}
        self.remotes = RemoteTable()  # the grader's objects handed to the submission (remote.py)
        self._out = io.StringIO()
        self.module = types.ModuleType("submission")
        try:
            compiled = compile(code, filename, "exec")
            with contextlib.redirect_stdout(self._out):
                exec(compiled, self.module.__dict__)
        except BaseException as exc:  # noqa: BLE001 - any failure to load is a LoadError
            raise LoadError(describe(exc)) from None

    def _keep(self, obj: Any) -> Handle:
        handle = Handle(len(self._objects) + 1)
        self._objects[handle.id] = obj
        return handle

    # -- the grader's objects, called back with the sandbox's copy semantics ---------------------

    def _proxy(self, remote: Remote) -> RemoteProxy:
        return RemoteProxy(self._callback, self.remotes.register(remote), remote.methods)

    def _callback(self, rid: int, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """As the sandbox's callback: data copied in (the submission's objects as Handles, proxies as
        the grader's objects), the result copied out (a Remote in it as a new proxy)."""
        try:
            copied = [self._from_wire(a) for a in args]
            named = {k: self._from_wire(v) for k, v in kwargs.items()}
            result = self.remotes.call(rid, method, copied, named)
        except (RemoteCallError, SubmissionError) as exc:  # SubmissionError: a reference never given out
            if isinstance(exc, SubmissionError):
                raise ValueError(exc.message) from None
            raise raised_in_submission(exc.type_name, exc.message) from None
        return _to_wire(result, self._objects, self._proxy)

    def _from_wire(self, value: Any) -> Any:
        """Decode a submission's value: plain data is copied, anything else becomes a Handle."""
        if type(value) in _PLAIN_SCALARS:
            return value
        if type(value) is RemoteProxy:  # handed back: the grader's own object, as the sandbox resolves it
            try:
                return self.remotes.resolve(value.remote_id)
            except RemoteCallError as exc:
                raise SubmissionError("ValueError", exc.message) from None
        if isinstance(value, torch.Tensor):
            return value.detach().clone()
        if isinstance(value, np.ndarray):
            return value.copy()
        if isinstance(value, np.generic):
            return value.item()
        if type(value) is list:
            return [self._from_wire(v) for v in value]
        if type(value) is tuple:
            return tuple(self._from_wire(v) for v in value)
        if type(value) is dict:
            return {k: self._from_wire(v) for k, v in value.items()}
        return self._keep(value)

    def has(self, name: str) -> bool:
        return name in self.module.__dict__

    def call(
        self,
        target: str | Handle,
        *args: Any,
        keep: Keep = False,
        memory_error_is_data: bool = False,  # in-process, every exception is data
        **kwargs: Any,
    ) -> Any:
        fn = self.module.__dict__[target] if isinstance(target, str) else _to_wire(target, self._objects)
        wire_args = [_to_wire(a, self._objects, self._proxy) for a in args]
        wire_kwargs = {k: _to_wire(v, self._objects, self._proxy) for k, v in kwargs.items()}
        try:
            with contextlib.redirect_stdout(self._out):
                result = fn(*wire_args, **wire_kwargs)
        except Exception as exc:  # noqa: BLE001 - the submission's exception is data
            raise SubmissionError(type(exc).__name__, str(exc)) from None
        if keep == "both":
            return self._keep(result), self._from_wire(result)
        return self._keep(result) if keep else self._from_wire(result)

    def call_later(
        self,
        target: str | Handle,
        *args: Any,
        keep: Keep = False,
        memory_error_is_data: bool = False,  # in-process, every exception is data
        **kwargs: Any,
    ) -> Pending:
        """Made at once here (the sandbox queues it); its answer or exception waits in the Pending."""
        pending = Pending()
        try:
            pending.resolve(self.call(target, *args, keep=keep, **kwargs))
        except SubmissionError as exc:
            pending.reject(exc)
        return pending

    def peak_watch(self) -> None:
        """None: the submission shares this process, so nothing about it can be measured apart."""
        return None

    def cpu_seconds(self) -> None:
        """None, as peak_watch: the submission's CPU time is this process's."""
        return None

    def call_measured(
        self, target: str | Handle, *args: Any, keep: bool = False, kept_heap: bool = False, **kwargs: Any
    ) -> tuple[Any, int]:  # kept_heap: the grader's own allocator is left as it is here
        from graders.sandbox.footprint import measured_call

        fn = self.module.__dict__[target] if isinstance(target, str) else _to_wire(target, self._objects)
        wire_args = [_to_wire(a, self._objects, self._proxy) for a in args]
        wire_kwargs = {k: _to_wire(v, self._objects, self._proxy) for k, v in kwargs.items()}
        try:
            with contextlib.redirect_stdout(self._out):
                result, largest = measured_call(fn, wire_args, wire_kwargs)
        except Exception as exc:  # noqa: BLE001 - the submission's exception is data
            raise SubmissionError(type(exc).__name__, str(exc)) from None
        return (self._keep(result) if keep else self._from_wire(result)), largest

    def call_measured_later(self, target: str | Handle, *args: Any, **kwargs: Any) -> Pending:
        """Measured at once here, as call_later calls at once."""
        pending = Pending()
        try:
            pending.resolve(self.call_measured(target, *args, **kwargs))
        except SubmissionError as exc:
            pending.reject(exc)
        return pending

    def call_counted(self, target: str | Handle, *args: Any, **kwargs: Any) -> tuple[Any, int, int]:
        from graders.sandbox.work_counter import counted_call

        fn = self.module.__dict__[target] if isinstance(target, str) else _to_wire(target, self._objects)
        wire_args = [_to_wire(a, self._objects, self._proxy) for a in args]
        wire_kwargs = {k: _to_wire(v, self._objects, self._proxy) for k, v in kwargs.items()}
        try:
            with contextlib.redirect_stdout(self._out):
                result, largest, madds = counted_call(fn, wire_args, wire_kwargs)
        except Exception as exc:  # noqa: BLE001 - the submission's exception is data
            raise SubmissionError(type(exc).__name__, str(exc)) from None
        return self._from_wire(result), largest, madds

    def call_and_storages(self, target: Handle, *args: Any, of: Handle) -> tuple[Any, list[tuple[int, int]]]:
        return self.call(target, *args), self.storages(of)

    def storages(self, handle: Handle) -> list[tuple[int, int]]:
        from graders.sandbox.footprint import storages

        return storages(_to_wire(handle, self._objects))

    def new_dict(self, initial: dict[str, Any] | None = None) -> Handle:
        return self._keep(_to_wire(dict(initial or {}), self._objects))

    def get(self, handle: Handle) -> Any:
        obj = self._objects[handle.id]
        if handle.attr:
            obj = getattr(obj, handle.attr)
        if type(obj) is dict:
            return {k: self._from_wire(v) for k, v in obj.items()}
        if isinstance(obj, torch.Tensor | np.ndarray):
            return self._from_wire(obj)
        raise TypeError(f"cannot decode a {type(obj).__name__}")

    def setitem(self, handle: Handle, key: str | int, value: Any) -> None:
        self._objects[handle.id][key] = _to_wire(value, self._objects)

    def output(self) -> str:
        return self._out.getvalue()[-4096:]

    def close(self) -> None:
        self._objects.clear()

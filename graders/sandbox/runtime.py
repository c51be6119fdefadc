"""What runs inside a submission's process once it is isolated: load the code, serve the SubmissionLink.

Requests come from the grader over the child's socket (graders/sandbox/wire.py frames):

    {"op": "load", "code"}                  {"op": "has", "name"}
    {"op": "call", "target", "args", "kwargs", "keep"}   keep: false, true (a Handle) or "both"
    {"op": "new_dict", "initial"[, "id"]}   {"op": "get", "handle"}     id: one the grader names (< 0)
    {"op": "setitem", "handle", "key", "value"}
    {"op": "call", ..., "measure": true}    the reply is [result, largest float tensor] (footprint.py)
    {"op": "call", ..., "heap": "kept"}     freed memory stays in the heap during the call (allocator.py)
    {"op": "storages", "handle"}            the tensor storages an object holds (footprint.py)
    {"op": "call", ..., "storages_of": h}   the reply is [result, storages of h after the call]
    {"op": "batch", "requests": [...]}      several requests, one payload, one round trip: they
                                            run in order; the reply is {"ok": [every answer]},
                                            or the first that does not answer ok, with "done":
                                            the answers before it (the rest do not run)

and each gets exactly one reply:

    {"ok": value}                  the result (plain data, or handles for everything else)
    {"raised": [type, message]}    the submission's code raised
    {"limit": verdict, "message"}  MemoryError or torch's "can't allocate memory"
    {"blocked": what}              it tried something the sandbox forbids (see _BLOCKED)
    {"exit": code}                 it called sys.exit() / raised SystemExit in a test
    {"load_error": message}        the code could not be loaded
    {"type_error" | "key_error": message}   a check asked for something impossible

While a call runs, the submission may call back a grader's object it was handed (a `Remote`,
graders/sandbox/remote.py): the child then sends `{"callback": {"id", "method", "args", "kwargs"}}`
and reads one frame back, `{"ok": value}` or `{"raised": [type, message]}`, before the call goes on;
the request's own reply comes after every callback it made.

Nothing here is trusted by the grader: a submission can rewrite all of it from inside and
only ever produce wrong data or a broken connection, both of which fail it.
"""

from __future__ import annotations

import io
import os
import re
import socket
import sys
import traceback
import types
from typing import Any, NoReturn

from graders.sandbox import wire
from graders.sandbox.allocator import kept_heap
from graders.sandbox.footprint import measured_call, storages
from graders.sandbox.protocol import Handle
from graders.sandbox.remote import RemoteProxy, raised_in_submission
from graders.sandbox.work_counter import counted_call

SUBMISSION_FILE = "submission.py"
MAX_REQUEST_BYTES = 512 * 1024 * 1024
MAX_TEXT = 2000
MAX_BATCH = 256
EXIT_PROTOCOL = 72
EXIT_NO_MEMORY = 71

_MEMORY_MESSAGE = re.compile(r"can't allocate memory|not enough memory|out of memory|bad_alloc", re.I)

# Audit events that mean "the submission tried something the sandbox forbids". The kernel
# layers (seccomp, Landlock, namespaces) are what actually stops them; the hook only lets
# the verdict say what was attempted instead of a bare "Operation not permitted".
_BLOCKED = {
    "os.fork": "creating a process (os.fork)",
    "os.forkpty": "creating a process (os.forkpty)",
    "os.exec": "running a program (os.exec*)",
    "os.posix_spawn": "starting a process (os.posix_spawn)",
    "os.spawn": "starting a process (os.spawn*)",
    "os.system": "running a shell command (os.system)",
    "subprocess.Popen": "starting a subprocess",
    "socket.connect": "opening a connection",
    "socket.bind": "listening on a socket",
    "socket.getaddrinfo": "looking up a host name",
    "socket.gethostbyname": "looking up a host name",
    "socket.gethostbyaddr": "looking up a host name",
}


def _text(value: Any) -> str:
    try:
        text = str(value)
    except Exception:  # noqa: BLE001 - a submission's __str__ may raise anything
        text = f"<unprintable {type(value).__name__}>"
    return text[:MAX_TEXT]


def _named(exc: BaseException) -> str:
    """'ValueError: bad shape', or just 'ValueError' when it came with no message (no dangling colon)."""
    text = _text(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class UnknownHandle(LookupError):
    """A check named a handle this process never gave out."""


class CappedOutput(io.TextIOBase):
    """sys.stdout/sys.stderr: writes go to the output file until the budget is spent, then vanish.

    Output never raises (a print past the cap is silently dropped, so printing a gigabyte is
    not an error); C-level writes to fd 1/2 bypass this and are capped by RLIMIT_FSIZE.
    """

    def __init__(self, fd: int, budget: list[int]) -> None:
        super().__init__()
        self._fd = fd
        self._budget = budget
        self.buffer = _CappedBinary(self)  # for code that writes bytes to sys.stdout.buffer

    def write(self, s: str) -> int:
        if not isinstance(s, str):
            raise TypeError(f"write() argument must be str, not {type(s).__name__}")
        self.write_bytes(s.encode("utf-8", "backslashreplace"))
        return len(s)

    def write_bytes(self, data: bytes | memoryview) -> None:
        if self._budget[0] > 0:
            data = data[: self._budget[0]]
            self._budget[0] -= len(data)
            try:
                while data:
                    data = data[os.write(self._fd, data) :]
            except OSError:
                self._budget[0] = 0

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd

    def isatty(self) -> bool:
        return False

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return "utf-8"


class _CappedBinary:
    def __init__(self, text: CappedOutput) -> None:
        self._text = text

    def write(self, data: bytes) -> int:
        view = memoryview(data).cast("B")
        self._text.write_bytes(view)
        return len(view)

    def flush(self) -> None:
        pass


class Runtime:
    def __init__(self, sock: socket.socket, output_budget: int) -> None:
        self.sock = sock
        self.objects: dict[int, Any] = {}
        self.module = types.ModuleType("submission")
        self.blocked: str | None = None
        budget = [output_budget]
        sys.stdout = CappedOutput(1, budget)
        sys.stderr = CappedOutput(2, budget)
        sys.addaudithook(self._audit)

    # -- policy messages --------------------------------------------------------------------

    def _audit(self, event: str, args: tuple[Any, ...]) -> None:
        what = _BLOCKED.get(event)
        if event == "socket.__new__" and args[1] != -1:  # -1: wrapping a descriptor it already has
            what = "creating a socket"
        if what is not None:
            self.blocked = self.blocked or what
            raise PermissionError(f"the sandbox does not allow {what}")

    # -- helpers ----------------------------------------------------------------------------

    def keep(self, obj: Any) -> Handle:
        handle = Handle(max(self.objects, default=0) + 1)  # positive: the grader names its own below 0
        self.objects[handle.id] = obj
        return handle

    def lookup(self, handle: Handle) -> Any:
        if handle.id not in self.objects:
            raise UnknownHandle(f"no object with handle id {handle.id}")
        return self.objects[handle.id]

    def resolve(self, handle: Handle) -> Any:
        obj = self.lookup(handle)
        return getattr(obj, handle.attr) if handle.attr else obj

    def _decode(self, value: Any, payload: bytearray) -> Any:
        return wire.decode(value, payload, self.resolve, remote=self._proxy)

    def _proxy(self, rid: int, methods: tuple[str, ...]) -> RemoteProxy:
        return RemoteProxy(self._callback, rid, methods)

    def _callback(self, rid: int, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Call a grader's object: one frame out, one frame back, while the grader waits on this call."""
        encoder = wire.Encoder(self.keep)
        header = {
            "callback": {
                "id": rid,
                "method": method,
                "args": encoder.encode(list(args)),
                "kwargs": encoder.encode(dict(kwargs)),
            }
        }
        wire.send_frame(self.sock, header, encoder.parts)
        try:
            reply, payload = wire.recv_frame(self.sock, max_bytes=MAX_REQUEST_BYTES)
        except (EOFError, OSError):
            os._exit(0)  # the grader is gone
        if type(reply) is dict and "ok" in reply:
            return self._decode(reply["ok"], payload)
        if type(reply) is dict and type(reply.get("raised")) is list and len(reply["raised"]) == 2:
            raise raised_in_submission(*(str(x) for x in reply["raised"]))
        os._exit(EXIT_PROTOCOL)

    # -- operations -------------------------------------------------------------------------

    def load(self, code: str) -> dict[str, Any]:
        module = self.module
        module.__file__ = SUBMISSION_FILE
        sys.modules["submission"] = module
        try:  # a copy on disk lets tracebacks and inspect.getsource show its lines
            with open(SUBMISSION_FILE, "w") as f:
                f.write(code)
        except OSError:
            pass
        try:
            compiled = compile(code, SUBMISSION_FILE, "exec")
        except SyntaxError as exc:
            return {"load_error": f"{type(exc).__name__}: {exc.msg} (line {exc.lineno})"}
        except ValueError as exc:  # e.g. a null byte in the source
            return {"load_error": _named(exc)}
        try:
            exec(compiled, module.__dict__)
        except SystemExit as exc:
            return {"load_error": f"SystemExit: the code calls sys.exit({_text(exc.code)}) when loaded"}
        except BaseException as exc:  # noqa: BLE001 - any failure to load is reported, not raised
            if self._is_memory(exc):
                raise
            line = ""
            for frame in reversed(traceback.extract_tb(exc.__traceback__)):
                if frame.filename == SUBMISSION_FILE:
                    line = f" (line {frame.lineno})"
                    break
            return {"load_error": f"{_named(exc)}{line}"}
        return {"ok": True}

    @staticmethod
    def _is_memory(exc: BaseException) -> bool:
        return isinstance(exc, MemoryError) or (
            isinstance(exc, RuntimeError) and bool(_MEMORY_MESSAGE.search(_text(exc)))
        )

    def call(self, req: dict[str, Any], payload: bytearray) -> tuple[dict[str, Any], list[memoryview]]:
        if req.get("heap") == "kept":
            with kept_heap():
                return self._call(req, payload)
        return self._call(req, payload)

    def _call(self, req: dict[str, Any], payload: bytearray) -> tuple[dict[str, Any], list[memoryview]]:
        target = req.get("target")
        if type(target) is str:
            if target not in self.module.__dict__:
                return {"raised": ["NameError", f"your code defines no {target!r}"]}, []
            fn = self.module.__dict__[target]
        else:
            fn = self.resolve(wire.decode_handle(target))
        args = self._decode(req.get("args"), payload)
        kwargs = self._decode(req.get("kwargs"), payload)
        if req.get("measure") == "work":  # the reply is [result, largest, multiply-adds] (work_counter.py)
            result, largest, madds = counted_call(fn, args, kwargs)
            header, parts = wire.encode([result, largest, madds], keep=self.keep)
            return {"ok": header}, parts
        if req.get("measure"):
            result, largest = measured_call(fn, args, kwargs)
            header, parts = wire.encode(
                [self.keep(result) if req.get("keep") else result, largest], keep=self.keep
            )
            return {"ok": header}, parts
        result = fn(*args, **kwargs)
        if req.get("keep") == "both":  # kept here and sent: (Handle, value), for checks that re-read it
            result = (self.keep(result), result)
        elif req.get("keep"):
            result = self.keep(result)
        if req.get("storages_of") is not None:  # one round trip for a call and the check after it
            found = storages(self.resolve(wire.decode_handle(req.get("storages_of"))))
            result = [result, [list(pair) for pair in found]]
        header, parts = wire.encode(result, keep=self.keep)
        return {"ok": header}, parts

    def get(self, req: dict[str, Any]) -> tuple[dict[str, Any], list[memoryview]]:
        obj = self.resolve(wire.decode_handle(req.get("handle")))
        if type(obj) is dict:
            if not all(type(k) is str or type(k) is int for k in obj):
                return {"type_error": "cannot decode a dict whose keys are not strings or ints"}, []
            encoder = wire.Encoder(self.keep)
            items = [[k, encoder.encode(v, 1)] for k, v in obj.items()]
            return {"ok": {"$": "dict", "items": items}}, encoder.parts
        if isinstance(obj, wire._Tensor | wire._ndarray):
            header, parts = wire.encode(obj, keep=self.keep)
            return {"ok": header}, parts
        return {"type_error": f"cannot decode a {type(obj).__name__}"}, []

    def batch(self, req: dict[str, Any], payload: bytearray) -> tuple[dict[str, Any], list[memoryview]]:
        requests = req.get("requests")
        if type(requests) is not list or not 0 < len(requests) <= MAX_BATCH:
            raise wire.WireError(f"a batch holds 1 to {MAX_BATCH} requests")
        answers: list[Any] = []
        parts: list[memoryview] = []
        size = 0
        for sub in requests:
            if type(sub) is not dict or sub.get("op") in ("batch", "load", "close"):
                raise wire.WireError("a batch holds calls, dicts and items only")
            reply, sub_parts = self.handle(sub, payload)
            if "ok" not in reply or self.blocked is not None:
                return {**reply, "done": {"$": "list", "items": answers}}, parts
            answers.append(wire.shift_offsets(reply["ok"], size))  # its buffers follow the earlier ones
            # An answer's buffers are the tensors' own memory: copied now, so that a view the call
            # returned says what it held when the call returned, as a lone call's answer would,
            # not what a later call of the batch wrote there (kv-cache-buffer's updates).
            parts += [memoryview(bytes(part)) for part in sub_parts]
            size += sum(len(part) for part in sub_parts)
        return {"ok": {"$": "list", "items": answers}}, parts

    def handle(self, req: Any, payload: bytearray) -> tuple[dict[str, Any], list[memoryview]]:
        if type(req) is not dict:
            raise wire.WireError("a request must be an object")
        op = req.get("op")
        if op == "batch":
            return self.batch(req, payload)
        try:
            if op == "load":
                return self.load(str(req.get("code"))), []
            if op == "has":
                return {"ok": req.get("name") in self.module.__dict__}, []
            if op == "call":
                return self.call(req, payload)
            if op == "new_dict":
                initial = dict(self._decode(req.get("initial"), payload) or {})
                named = req.get("id")
                if named is None:
                    return {"ok": wire.encode(self.keep(initial))[0]}, []
                if type(named) is not int or named >= 0 or named in self.objects:
                    raise wire.WireError(f"bad handle id {named!r} for a new dict")
                self.objects[named] = initial  # the grader's own name for it: no answer to wait for
                return {"ok": None}, []
            if op == "get":
                return self.get(req)
            if op == "storages":
                found = storages(self.resolve(wire.decode_handle(req.get("handle"))))
                return {"ok": wire.encode([list(pair) for pair in found])[0]}, []
            if op == "setitem":
                obj = self.lookup(wire.decode_handle(req.get("handle")))
                obj[req.get("key")] = self._decode(req.get("value"), payload)
                return {"ok": None}, []
            if op == "close":
                os._exit(0)
        except UnknownHandle as exc:
            return {"key_error": str(exc)}, []
        except wire.WireError:
            raise
        except SystemExit as exc:
            return {"exit": _text(exc.code)}, []
        except BaseException as exc:  # noqa: BLE001 - the submission's exception is data
            # A call that expects MemoryError as an answer gets it as one; a real exhaustion
            # there then reads as "raised MemoryError", which gives the submission nothing it
            # could not get by raising MemoryError itself.
            if self._is_memory(exc) and not (op == "call" and req.get("memory_error_is_data") is True):
                return {"limit": "memory_limit", "message": _named(exc)}, []
            return {"raised": [type(exc).__name__, _text(exc)]}, []
        raise wire.WireError(f"unknown operation {op!r}")

    def serve(self) -> NoReturn:
        while True:
            try:
                req, payload = wire.recv_frame(self.sock, max_bytes=MAX_REQUEST_BYTES)
            except (EOFError, OSError, wire.WireError):
                os._exit(0)
            try:
                reply, parts = self.handle(req, payload)
                del req, payload
                if self.blocked is not None:
                    reply, parts = {"blocked": self.blocked}, []
                wire.send_frame(self.sock, reply, parts)
            except MemoryError:
                self._last_word({"limit": "memory_limit", "message": "MemoryError"}, EXIT_NO_MEMORY)
            except wire.WireError:
                os._exit(EXIT_PROTOCOL)
            except OSError:
                os._exit(EXIT_PROTOCOL)

    def _last_word(self, reply: dict[str, Any], code: int) -> None:
        try:
            wire.send_frame(self.sock, reply)
        except BaseException:  # noqa: BLE001 - nothing left to do but leave
            os._exit(code)

"""One submission's process, seen from the grader: `SandboxLink`, the real SubmissionLink backend.

A link owns the grader's end of one child's socket (graders/sandbox/forkserver/server.py forked
it, graders/sandbox/client.py asked for it) and drives it through the SubmissionLink protocol of
graders/sandbox/protocol.py: every request is a wire frame (graders/sandbox/wire.py), and
setitem and new_dict, whose only answer is "done", wait to go out with the next request, in
one round trip. Nothing the child sends is trusted: a broken frame, an early exit, a blocked
operation or the wall clock ends the session with LimitExceeded; the exit report the fork
server sends for the child explains how it ended. While it waits for a reply, the link answers
the child's callbacks to the grader's objects it was handed (`Remote`, graders/sandbox/remote.py),
running them here, where the submission cannot reach them. How a reply is read, and a child's
end explained, is graders/sandbox/child_replies.py.
"""

from __future__ import annotations

import os
import socket
import time
from typing import Any

from graders.limits import Limits
from graders.sandbox import outside, wire
from graders.sandbox.child_replies import ReplyReader, SandboxError
from graders.sandbox.protocol import (
    Handle,
    Keep,
    LimitExceeded,
    LoadError,
    Pending,
    SubmissionError,
    counted_reply,
    measured_reply,
    storages_reply,
)
from graders.sandbox.remote import RemoteCallError, RemoteTable

__all__ = ["SandboxError", "SandboxLink"]
MAX_PENDING, MAX_PENDING_BYTES = 64, 64 << 20  # requests held back before they go out on their own


def _call_header(
    encoder: wire.Encoder, target: str | Handle, args: tuple[Any, ...], kwargs: dict[str, Any], *, keep: Keep
) -> dict[str, Any]:
    """A "call" request; its tensors go into `encoder` (graders/sandbox/runtime.py reads it)."""
    return {
        "op": "call",
        "target": target if isinstance(target, str) else encoder.encode(target),
        "args": encoder.encode(list(args)),
        "kwargs": encoder.encode(dict(kwargs)),
        "keep": keep,
    }


class SandboxLink(ReplyReader):
    """One submission's process, seen from the grader. Implements the SubmissionLink protocol."""

    def __init__(
        self,
        conn: socket.socket,
        sock: socket.socket,
        out_fd: int,
        pid: int,
        limits: Limits,
        deadline: float,
        release: Any,
        spare: bool = False,
    ) -> None:
        self.conn = conn
        self.sock = sock
        self.out_fd = out_fd
        self.pid = pid
        self.limits = limits
        self.deadline = deadline
        self._release = release
        self.spare = spare  # the child was forked and isolated ahead of this request
        self._exit: dict[str, Any] | None = None
        self._failure: LimitExceeded | None = None
        self._final_output: str | None = None
        self.closed = False
        self.unloaded_rss: int | None = None  # load() measures it
        self.unloaded_file: int | None = None  # its file pages (code) then
        # setitem and new_dict requests not sent yet: they go out with the next request, in one round trip
        # (graders/sandbox/runtime.py "batch"), their tensors in that request's payload.
        self._pending: list[dict[str, Any]] = []
        self._pending_replies: list[Pending | None] = []  # per held request: who waits for its answer
        self._pending_encoder: wire.Encoder | None = None
        self._named = 0  # the last handle id this side named (new_dict): -1, -2, ...
        self.round_trips = 0  # requests sent (a batch counts once), for graders/bench.py
        self.remotes = RemoteTable()  # the grader's objects this child was handed, by id
        self.bytes_sent = 0
        self.bytes_received = 0

    @property
    def failure(self) -> LimitExceeded | None:
        """The limit that ended this session, if any (even if a check swallowed the exception)."""
        return self._failure

    # -- the protocol -----------------------------------------------------------------------

    def load(self, code: str) -> None:
        """Run the code as module `submission` (file submission.py); LoadError with the message and line."""
        try:  # what the process holds before the code runs: the floor of peak_watch()
            self.unloaded_rss = outside.resident(self.pid)[0]
            self.unloaded_file = outside.resident_file(self.pid)
        except outside.NotMeasurable:
            self.unloaded_rss = self.unloaded_file = None
        self._request({"op": "load", "code": code})

    def peak_watch(self) -> outside.PeakWatch | None:
        """The kernel's peak of this child's resident memory over a `with` block, above its
        resident memory before the code was loaded plus the code pages it touched since
        (graders/sandbox/outside.py); None where the kernel does not give it."""
        if self.unloaded_rss is None:
            return None
        try:
            outside.resident(self.pid)
        except outside.NotMeasurable:
            return None
        return outside.PeakWatch(self.pid, floor=self.unloaded_rss, file_floor=self.unloaded_file)

    def cpu_seconds(self) -> float | None:
        """This child's CPU seconds so far, from /proc/<pid>/stat (None where the kernel does not say)."""
        try:
            return outside.cpu_seconds(self.pid)
        except outside.NotMeasurable:
            return None

    def has(self, name: str) -> bool:
        return bool(self._request({"op": "has", "name": name}))

    def call(
        self,
        target: str | Handle,
        *args: Any,
        keep: Keep = False,
        memory_error_is_data: bool = False,
        **kwargs: Any,
    ) -> Any:
        encoder = self._encoder()
        header = _call_header(encoder, target, args, kwargs, keep=keep if keep == "both" else bool(keep))
        if memory_error_is_data:
            header["memory_error_is_data"] = True
        return self._request(header, encoder)

    def call_later(
        self,
        target: str | Handle,
        *args: Any,
        keep: Keep = False,
        memory_error_is_data: bool = False,
        **kwargs: Any,
    ) -> Pending:
        encoder = self._encoder()
        header = _call_header(encoder, target, args, kwargs, keep=keep if keep == "both" else bool(keep))
        if memory_error_is_data:
            header["memory_error_is_data"] = True
        pending = Pending(self._flush)
        self._defer(header, encoder, pending)
        return pending

    def call_measured(
        self, target: str | Handle, *args: Any, keep: bool = False, kept_heap: bool = False, **kwargs: Any
    ) -> tuple[Any, int]:
        encoder = self._encoder()
        header = {**_call_header(encoder, target, args, kwargs, keep=bool(keep)), "measure": True}
        if kept_heap:
            header["heap"] = "kept"
        return measured_reply(self._request(header, encoder))

    def call_measured_later(self, target: str | Handle, *args: Any, **kwargs: Any) -> Pending:
        encoder = self._encoder()
        header = {**_call_header(encoder, target, args, kwargs, keep=False), "measure": True}
        pending = Pending(self._flush, measured_reply)
        self._defer(header, encoder, pending)
        return pending

    def call_counted(self, target: str | Handle, *args: Any, **kwargs: Any) -> tuple[Any, int, int]:
        encoder = self._encoder()
        header = {**_call_header(encoder, target, args, kwargs, keep=False), "measure": "work"}
        return counted_reply(self._request(header, encoder))

    def call_and_storages(self, target: Handle, *args: Any, of: Handle) -> tuple[Any, list[tuple[int, int]]]:
        encoder = self._encoder()
        header = {**_call_header(encoder, target, args, {}, keep=False), "storages_of": encoder.encode(of)}
        reply = self._request(header, encoder)
        if type(reply) is not list or len(reply) != 2:
            raise SubmissionError("RuntimeError", "the call's reply was tampered with")
        return reply[0], storages_reply(reply[1])

    def storages(self, handle: Handle) -> list[tuple[int, int]]:
        return storages_reply(self._request({"op": "storages", "handle": wire.Encoder().encode(handle)}))

    def new_dict(self, initial: dict[str, Any] | None = None) -> Handle:
        """Sent with the next request, like setitem: the grader names the dict (a negative id)."""
        self._named -= 1
        encoder = self._encoder()
        self._defer(
            {"op": "new_dict", "initial": encoder.encode(dict(initial or {})), "id": self._named}, encoder
        )
        return Handle(self._named)

    def get(self, handle: Handle) -> Any:
        return self._request({"op": "get", "handle": wire.Encoder().encode(handle)})

    def setitem(self, handle: Handle, key: str | int, value: Any) -> None:
        """Sent with the next request (one round trip for a step's cache and the step itself)."""
        encoder = self._encoder()
        header = {
            "op": "setitem",
            "handle": encoder.encode(handle),
            "key": key,
            "value": encoder.encode(value),
        }
        self._defer(header, encoder)

    def output(self) -> str:
        if self._final_output is not None:
            return self._final_output
        chars = self.limits.output_excerpt_chars
        try:
            size = os.fstat(self.out_fd).st_size
            start = max(0, size - 4 * chars)
            text = os.pread(self.out_fd, size - start, start).decode("utf-8", "replace")[-chars:]
        except OSError:
            return ""
        if size >= self.limits.output_bytes:
            text += f"\n[output capped at {self.limits.output_bytes} bytes]"
        return text

    def close(self) -> None:
        if self.closed:
            return
        self._final_output = self.output()
        self.closed = True
        try:
            self._stop(wait_for_exit=False)
        finally:
            for closer in (self.sock.close, self.conn.close, lambda: os.close(self.out_fd)):
                try:
                    closer()
                except OSError:
                    pass
            self._release()

    def __enter__(self) -> SandboxLink:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- plumbing ---------------------------------------------------------------------------

    def _defer(self, header: dict[str, Any], encoder: wire.Encoder, reply: Pending | None = None) -> None:
        """Hold a request back until the next request goes out (`reply` waits for its answer)."""
        if self._failure is not None:
            raise self._failure
        if self.closed:
            raise RuntimeError("the session is closed")
        self._pending.append(header)
        self._pending_replies.append(reply)
        self._pending_encoder = encoder
        if len(self._pending) >= MAX_PENDING or encoder.size >= MAX_PENDING_BYTES:
            self._flush()

    def _flush(self) -> None:
        """Send what is held back now; each waiting Pending gets its answer (or the exception)."""
        if not self._pending:
            return
        header, reply = self._pending.pop(), self._pending_replies.pop()
        encoder = self._pending_encoder
        if not self._pending:
            self._pending_encoder = None
        try:
            value = self._request(header, encoder, reply)
        except (SubmissionError, LimitExceeded, LoadError, TypeError, KeyError) as exc:
            if reply is not None and not reply.done:
                reply.reject(exc)
            if reply is None:
                raise
            return
        if reply is not None and not reply.done:
            reply.resolve(value)

    def _encoder(self) -> wire.Encoder:
        """The encoder a request's values go into: the pending setitems' one, so all share a payload."""
        return self._pending_encoder or wire.Encoder(remote=self.remotes.register)

    def _answer_callback(self, call: Any, payload: bytearray) -> None:
        """Run one callback of the child's on the grader's object and send its answer back."""
        if type(call) is not dict:
            raise wire.WireError("a callback must be an object")
        try:
            args = wire.decode(call.get("args"), payload, remote=self._remote)
            kwargs = wire.decode(call.get("kwargs"), payload, remote=self._remote)
            result = self.remotes.call(call.get("id"), call.get("method"), args, kwargs)
            encoder = wire.Encoder(remote=self.remotes.register)
            header: dict[str, Any] = {"ok": encoder.encode(result)}
            parts = encoder.parts
        except RemoteCallError as exc:
            header, parts = {"raised": [exc.type_name, exc.message]}, []
        wire.send_frame(self.sock, header, parts)
        self.bytes_received += len(payload)

    def _request(
        self, header: dict[str, Any], encoder: wire.Encoder | None = None, reply: Pending | None = None
    ) -> Any:
        """Send one request (with everything held back before it) and interpret the answer."""
        if self._failure is not None:
            raise self._failure
        if self.closed:
            raise RuntimeError("the session is closed")
        waiting: list[Pending | None] | None = None
        if self._pending:
            encoder = self._pending_encoder
            header = {"op": "batch", "requests": [*self._pending, header]}
            waiting = [*self._pending_replies, reply]
            self._pending, self._pending_replies, self._pending_encoder = [], [], None
        try:
            return self._exchange(header, encoder, waiting)
        except BaseException as exc:
            for pending in waiting or ():
                if pending is not None and not pending.done:
                    pending.reject(exc)  # that request, or one never made because of it
            raise

    def _exchange(
        self, header: dict[str, Any], encoder: wire.Encoder | None, waiting: list[Pending | None] | None
    ) -> Any:
        parts = encoder.parts if encoder is not None else None
        try:
            remaining = self.deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            self.sock.settimeout(remaining)
            wire.send_frame(self.sock, header, parts)
            self.round_trips += 1
            self.bytes_sent += encoder.size if encoder is not None else 0
            answer, payload = wire.recv_frame(
                self.sock, max_bytes=self.limits.max_reply_bytes, deadline=self.deadline, what="reply"
            )
            while type(answer) is dict and "callback" in answer:  # the child calls a grader's object
                self._answer_callback(answer["callback"], payload)
                answer, payload = wire.recv_frame(
                    self.sock, max_bytes=self.limits.max_reply_bytes, deadline=self.deadline, what="reply"
                )
            self.bytes_received += len(payload)
        except TimeoutError:
            self._stop()
            raise self._fail(
                "timeout", f"your code did not finish within the {self.limits.wall_seconds:g} s time limit"
            ) from None
        except wire.FrameTooLarge as exc:
            self._stop()
            message = f"your code's process sent back a reply too large to read: {exc}"
            raise self._fail("error", message) from None
        except wire.WireError as exc:
            self._stop()
            raise self._fail("error", f"your code's process sent back something unreadable: {exc}") from None
        except (EOFError, OSError):
            raise self._fail(*self._explain_exit(self._stop())) from None
        if waiting is not None:
            return self._interpret_batch(answer, payload, waiting)
        return self._interpret(answer, payload)

"""How the grader reads what one submission's process sends back: `ReplyReader`, the half of
`SandboxLink` (graders/sandbox/submission_process.py) that turns a reply into a value or the
submission's exception, and a broken reply, a limit hit or the child's exit (the fork server's
exit report) into the session's LimitExceeded, said in words.
"""

from __future__ import annotations

import json
import signal
import socket
from typing import Any

from graders.limits import Limits
from graders.sandbox import wire
from graders.sandbox.protocol import LimitExceeded, LoadError, Pending, SubmissionError
from graders.sandbox.remote import RemoteCallError, RemoteTable

EXIT_WAIT_S = 5.0
EXIT_SETUP_FAILED, EXIT_NO_MEMORY = 70, 71  # graders/sandbox/child_side.py, runtime.py


class SandboxError(Exception):
    """The sandbox itself failed (could not start, could not fork): not the submission's fault."""


class ReplyReader:
    """Reading a child's replies and explaining its end; SandboxLink sends the requests."""

    conn: socket.socket  # to the fork server: the kill request and the child's exit report
    limits: Limits
    remotes: RemoteTable
    _exit: dict[str, Any] | None
    _failure: LimitExceeded | None

    def _remote(self, rid: int, methods: tuple[str, ...]) -> Any:
        """A grader's object the child named; an id it was never given is an unreadable reply."""
        try:
            return self.remotes.resolve(rid)
        except RemoteCallError as exc:
            raise wire.WireError(exc.message) from None

    def _interpret_batch(self, reply: Any, payload: bytearray, waiting: list[Pending | None]) -> Any:
        """A batch's answer: every request's, or those before the one that failed and its failure."""
        failed = type(reply) is dict and "ok" not in reply and "done" in reply
        answers = self._interpret({"ok": reply.pop("done")} if failed else reply, payload)
        if type(answers) is not list or not (
            len(answers) < len(waiting) if failed else len(answers) == len(waiting)
        ):
            self._stop()
            raise self._fail("error", "your code's process answered a batch with something else")
        for pending, answer in zip(waiting, answers, strict=False):
            if pending is not None:
                pending.resolve(answer)
        if not failed:
            return answers[-1]
        return self._interpret(reply, payload)  # raises what stopped the batch (_request passes it on)

    def _interpret(self, reply: Any, payload: bytearray) -> Any:
        if type(reply) is not dict or len(reply) > 2:
            self._stop()
            raise self._fail("error", "your code's process sent back something unreadable")
        if "ok" in reply:
            try:
                return wire.decode(reply["ok"], payload, remote=self._remote)
            except wire.WireError as exc:
                self._stop()
                raise self._fail(
                    "error", f"your code's process sent back something unreadable: {exc}"
                ) from None
        if "raised" in reply and isinstance(reply["raised"], list) and len(reply["raised"]) == 2:
            type_name, message = (str(x) for x in reply["raised"])
            raise SubmissionError(type_name[:200], message[:2000])
        if "load_error" in reply:
            raise LoadError(str(reply["load_error"])[:2000])
        if "type_error" in reply:
            raise TypeError(str(reply["type_error"])[:500])
        if "key_error" in reply:
            raise KeyError(str(reply["key_error"])[:500])
        if "setup_error" in reply:
            self._stop()
            raise SandboxError(f"the sandbox could not isolate the submission: {reply['setup_error']}")
        self._stop()
        if reply.get("limit") == "memory_limit":
            gib = self.limits.memory_bytes / 2**30
            message = (
                f"your code ran out of memory (the limit is {gib:g} GiB): {str(reply.get('message'))[:300]}"
            )
            raise self._fail("memory_limit", message)
        if "blocked" in reply:
            raise self._fail(
                "error",
                f"the sandbox blocked {str(reply['blocked'])[:200]}: submissions may not start processes, "
                "use the network, or touch files outside their temporary folder",
            )
        if "exit" in reply:
            raise self._fail("error", f"your code called sys.exit({str(reply['exit'])[:100]}) during a test")
        raise self._fail("error", "your code's process sent back something unreadable")

    def _fail(self, verdict: str, message: str) -> LimitExceeded:
        self._failure = LimitExceeded(verdict, message)
        return self._failure

    def _stop(self, *, wait_for_exit: bool = True) -> dict[str, Any]:
        """Kill the child (if it still runs) and wait for the server's exit report.

        wait_for_exit=False (a session closed after its verdict) also takes the server's word that
        the SIGKILL is sent and the child could start nothing (seccomp on): nothing of it runs
        any more, and the server reaps it a few milliseconds later.
        """
        if self._exit is not None:
            return self._exit
        event: dict[str, Any] = {}
        wanted = ("exit",) if wait_for_exit else ("exit", "killed")
        try:
            self.conn.settimeout(EXIT_WAIT_S)
            self.conn.send(b'{"op": "kill"}')
            while True:
                data = self.conn.recv(1 << 16)
                if not data:
                    break
                message = json.loads(data)
                if isinstance(message, dict) and message.get("event") in wanted:
                    event = message
                    break
        except (OSError, ValueError):
            pass
        self._exit = event
        return event

    def _explain_exit(self, event: dict[str, Any]) -> tuple[str, str]:
        if not event:  # no exit report: the fork server itself is gone
            raise SandboxError("the fork server stopped answering")
        sig, code, cpu = event.get("signal"), event.get("code"), event.get("cpu") or 0.0
        if event.get("killed") == "deadline":
            return "timeout", f"your code did not finish within the {self.limits.wall_seconds:g} s time limit"
        if sig == signal.SIGXCPU or (sig == signal.SIGKILL and cpu >= self.limits.cpu_seconds - 0.05):
            return "timeout", f"your code used more than {self.limits.cpu_seconds} s of CPU time"
        if sig == signal.SIGSYS:
            return "error", "the sandbox stopped your code for a forbidden system call"
        if code == EXIT_NO_MEMORY:
            return "memory_limit", "your code ran out of memory"
        if code == EXIT_SETUP_FAILED:
            return "error", "the sandbox could not start your code"
        if sig is not None:
            name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
            hint = (
                " (often a sign of running out of memory)" if sig in (signal.SIGSEGV, signal.SIGABRT) else ""
            )
            return "error", f"your code's process was killed by {name}{hint}"
        if code is None:
            return "error", "your code's process stopped answering"
        return "error", f"your code's process exited (status {code}) in the middle of a test: os._exit()?"

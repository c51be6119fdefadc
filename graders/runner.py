"""Grade a submission: run a challenge's checks against it in a fresh sandboxed child.

This is the trusted side. It holds the check and the reference, makes fresh random
inputs (inside the check), and compares what comes back; the submission runs in a child
of the fork server (graders/sandbox) and only ever exchanges data with it.

    grade(slug, code, limits=None) -> Result     never raises for a bad submission
    warm_up()                                    start the fork server now (app start-up)
    shutdown()                                   stop it (also done at exit)

Thread-safe: grading threads share one fork server; at most `limits.worker_slots`
children run at once (the slots are fixed by the first call that starts the server).
"""

from __future__ import annotations

import logging
import time
from types import ModuleType
from typing import Any

from graders.checks import load_check
from graders.checks.remembered import remembering
from graders.limits import Limits
from graders.sandbox.client import (
    ForkServerClient,
    SandboxError,
    SandboxLink,
    shared_client,
    shutdown_shared,
)
from graders.sandbox.protocol import LimitExceeded, LoadError, SubmissionError
from graders.verdict import Result, TestResult, Verdict

log = logging.getLogger("graders.runner")

_LIMIT_TESTS = {
    "timeout": "finishes within the time limit",
    "memory_limit": "stays within the memory limit",
    "error": "runs inside the sandbox's rules",
}


def warm_up(
    limits: Limits | None = None, *, uid_base: int | None = None, uid_count: int | None = None
) -> dict[str, Any]:
    """Start the fork server (if it is not running) and return its isolation report.

    uid_base/uid_count: the uids its children may run under as root (app/config.py).
    """
    client = shared_client((limits or Limits()).worker_slots, uid_base=uid_base, uid_count=uid_count)
    client.ensure_started()
    return dict(client.isolation)


def shutdown() -> None:
    """Stop the fork server and every child it still has."""
    shutdown_shared()


def grade(
    slug: str, code: str, limits: Limits | None = None, *, client: ForkServerClient | None = None
) -> Result:
    """The verdict on `code` for challenge `slug`. KeyError for an unknown slug.

    `client` picks another fork server than the process-wide one (tests use it to run one
    with some layers disabled).
    """
    check = load_check(slug)
    limits = limits or Limits()
    client = client or shared_client(limits.worker_slots)
    start = time.monotonic()
    try:
        result = _grade(check, slug, code, limits, client)
    except SandboxError as exc:
        log.error("sandbox failure while grading %s: %s", slug, exc)
        result = Result(
            slug,
            Verdict.ERROR,
            tests=[TestResult("runs in the sandbox", False, "the grader could not run your code")],
            diagnosis=[f"The sandbox failed ({exc}); this is not your code's fault, please try again."],
        )
    result.duration_ms = int((time.monotonic() - start) * 1000)
    return result


def _grade(check: ModuleType, slug: str, code: str, limits: Limits, client: ForkServerClient) -> Result:
    entry = check.ENTRY_POINT
    session = client.open(limits)
    try:
        return _run(check, slug, code, session, entry)
    finally:
        session.close()  # kills the child and everything it started (the fork server reaps them)


def _run(check: ModuleType, slug: str, code: str, session: SandboxLink, entry: str) -> Result:
    def finish(result: Result) -> Result:
        result.output = session.output()
        return result

    try:
        session.load(code)
        if not session.has(entry):
            return finish(
                Result(
                    slug,
                    Verdict.ERROR,
                    tests=[
                        TestResult(
                            f"defines {entry}",
                            False,
                            f"your code has no top-level `{entry}`: the grader calls it by that name",
                        )
                    ],
                    diagnosis=[f"Define `{entry}` at the top level of your file (check its spelling)."],
                )
            )
        with remembering():  # one verdict computes each known-wrong variant once, however often asked
            report = check.run(session)
        if session.failure is not None:  # a check that swallowed it does not get to ignore it
            raise session.failure
    except LoadError as exc:
        return finish(
            Result(
                slug,
                Verdict.ERROR,
                tests=[TestResult("loads", False, str(exc))],
                diagnosis=[f"Your code could not be loaded: {exc}"],
            )
        )
    except LimitExceeded as exc:
        verdict = Verdict(exc.verdict) if exc.verdict in _LIMIT_TESTS else Verdict.ERROR
        return finish(
            Result(
                slug,
                verdict,
                tests=[TestResult(_LIMIT_TESTS.get(exc.verdict, "runs"), False, exc.message)],
                diagnosis=[_limit_diagnosis(exc)],
            )
        )
    except SubmissionError as exc:  # raised outside any named test of the battery
        return finish(
            Result(
                slug,
                Verdict.FAILED,
                tests=[TestResult("runs", False, f"your code raised {exc}")],
            )
        )
    except SandboxError:
        raise
    except Exception:  # a check's own failure must never turn into a verdict in the submission's favour
        log.exception("the %s check failed", slug)
        return finish(
            Result(
                slug,
                Verdict.ERROR,
                tests=[TestResult("grader", False, "the grader failed on this submission")],
                diagnosis=["The grader itself failed on this submission; it has been logged."],
            )
        )
    passed = bool(report.tests) and all(t.passed for t in report.tests)
    return finish(
        Result(
            slug,
            Verdict.PASSED if passed else Verdict.FAILED,
            tests=list(report.tests),
            diagnosis=list(report.diagnosis),
        )
    )


def _limit_diagnosis(exc: LimitExceeded) -> str:
    if exc.verdict == "timeout":
        return "Stopped at the time limit: look for a loop that never ends or work that grows too fast."
    if exc.verdict == "memory_limit":
        return "Stopped at the memory limit: look for a tensor far bigger than the inputs need."
    return f"Stopped: {exc.message}."

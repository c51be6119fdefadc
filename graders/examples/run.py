"""Run a submission on a challenge's visible examples and one custom input, in the sandbox.

    run_examples(slug, code, custom=None, limits=None) -> RunResult   never raises for bad code
    run_cases(spec, session, custom) -> list[CaseResult]              the cases on an open session

The submission runs in a child of the same fork server that grades (the names come from
graders.runner, the public face of the sandbox); the inputs and the reference's outputs are
made here, in the trusted process, as the checks do. A Run reports; it never decides a
verdict that counts, and it never touches the hidden battery.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from graders.checks.report import CheckReport, Mismatch
from graders.examples.compare import OutputResult, judge, summarize
from graders.examples.registry import spec_for
from graders.examples.spec import RunSpec, describe_values
from graders.limits import Limits
from graders.runner import ForkServerClient, LimitExceeded, LoadError, SandboxError, shared_client
from graders.sandbox.protocol import SubmissionError, SubmissionLink
from graders.verdict import Verdict

log = logging.getLogger("graders.examples")
# The references: each challenge's solution.py, beside its prompt (questions/challenges/SLUG/).
CHALLENGES = Path(__file__).resolve().parents[2] / "questions" / "challenges"


@dataclass
class CaseResult:
    name: str
    description: str
    input: dict[str, Any]
    passed: bool
    message: str = ""  # why it failed, in interviewer words; "" when it passed
    outputs: list[OutputResult] = field(default_factory=list)
    custom: bool = False
    # When the submission gave nothing to compare (it raised): what the reference returns on this
    # input, [{"what", "expected"}], so the page still shows what was expected.
    reference: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "input": self.input,
            "passed": self.passed,
            "message": self.message,
            "outputs": [o.to_json() for o in self.outputs],
            "custom": self.custom,
            "reference": self.reference,
        }


@dataclass
class RunResult:
    """`verdict` as the battery's (passed, failed, error, timeout, memory_limit), over these cases only."""

    challenge: str
    verdict: Verdict
    message: str = ""  # why the code did not run to the end (error, timeout, memory_limit)
    examples: list[CaseResult] = field(default_factory=list)
    custom: CaseResult | None = None
    duration_ms: int = 0
    output: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "challenge": self.challenge,
            "verdict": self.verdict.value,
            "message": self.message,
            "examples": [c.to_json() for c in self.examples],
            "custom": self.custom.to_json() if self.custom else None,
            "duration_ms": self.duration_ms,
            "output": self.output,
        }


def run_case(
    spec: RunSpec, session: SubmissionLink, name: str, description: str, values: dict[str, Any]
) -> CaseResult:
    """One case; the submission's exception or an undecodable answer fails it with a message.

    A limit (LimitExceeded) ends the whole run: it is not caught here."""
    result = CaseResult(name, description, dict(values), passed=False)
    report = CheckReport()  # collects nothing we show; `fail` wants somewhere to note a diagnosis
    missing = [name for name in spec.names if not session.has(name)]
    if missing:
        result.message = f"your code has no top-level `{missing[0]}`: the examples call it by that name"
        return result
    try:
        compared = spec.case(session, dict(values))
    except Mismatch as exc:
        result.message = str(exc)
        return result
    except SubmissionError as exc:
        result.message = f"your code raised {exc}"
        return result
    result.outputs = [judge(item, report) for item in compared]
    failed = [o for o in result.outputs if not o.passed]
    result.passed = bool(result.outputs) and not failed
    result.message = failed[0].message if failed else ""
    return result


def run_cases(
    spec: RunSpec, session: SubmissionLink, custom: dict[str, Any] | None
) -> tuple[list[CaseResult], CaseResult | None]:
    examples = [run_case(spec, session, e.name, e.description, dict(e.values)) for e in spec.examples]
    mine = None
    if custom is not None:
        mine = run_case(spec, session, "your input", describe_values(custom), custom)
        mine.custom = True
    return examples, mine


def run_examples(
    slug: str,
    code: str,
    custom: dict[str, Any] | None = None,
    limits: Limits | None = None,
    *,
    client: ForkServerClient | None = None,
) -> RunResult:
    """Run `code` on the examples of `slug` (and `custom`, validated: spec_for(slug).validate).

    KeyError for an unknown slug; InvalidRunInput for a custom input the spec refuses (raised
    before anything runs)."""
    spec = spec_for(slug)
    values = spec.validate(custom) if custom is not None else None
    limits = limits or Limits()
    client = client or shared_client(limits.worker_slots)
    start = time.monotonic()
    try:
        session = client.open(limits)
        try:
            result = _drive(spec, code, session, values)
        finally:
            session.close()  # kills and reaps the child and everything it started
        _add_reference_outputs(spec, client, limits, result)
    except SandboxError as exc:
        log.error("sandbox failure while running the examples of %s: %s", slug, exc)
        result = RunResult(
            slug, Verdict.ERROR, "The sandbox failed; this is not your code's fault, please try again."
        )
    result.duration_ms = int((time.monotonic() - start) * 1000)
    return result


def _drive(spec: RunSpec, code: str, session: Any, values: dict[str, Any] | None) -> RunResult:
    result = RunResult(spec.slug, Verdict.ERROR)
    try:
        session.load(code)
        if not session.has(spec.entry_point):
            result.message = (
                f"your code has no top-level `{spec.entry_point}`: the examples call it by that name"
            )
        else:
            result.examples, result.custom = run_cases(spec, session, values)
            if session.failure is not None:  # a case that swallowed it does not get to ignore it
                raise session.failure
            cases = [*result.examples, *([result.custom] if result.custom else [])]
            result.verdict = Verdict.PASSED if all(c.passed for c in cases) else Verdict.FAILED
    except LoadError as exc:
        result.message = f"Your code could not be loaded: {exc}"
    except LimitExceeded as exc:
        result.verdict = Verdict(exc.verdict) if exc.verdict in ("timeout", "memory_limit") else Verdict.ERROR
        result.message = f"Stopped: {exc.message}"
    except SandboxError:
        raise
    except Exception:  # a builder's own failure must never pass for the submission's
        log.exception("the %s examples failed", spec.slug)
        result.verdict = Verdict.ERROR
        result.message = "The examples runner failed on this code; it has been logged."
    result.output = session.output()
    return result


def _add_reference_outputs(
    spec: RunSpec, client: ForkServerClient, limits: Limits, result: RunResult
) -> None:
    """The reference's outputs for each case the submission raised on (or answered undecodably),
    from the challenge's solution.py run on the same inputs in a sandbox session of its own (a case
    builds its expected output beside the submission's calls, so it needs something to call).
    Best effort: any failure here leaves those cases as they were."""
    bare = [c for c in (*result.examples, *([result.custom] if result.custom else [])) if not c.outputs]
    solution = CHALLENGES / spec.slug / "solution.py"
    if not bare or not solution.is_file():
        return
    try:
        session = client.open(limits)
        try:
            session.load(solution.read_text())
            for case in bare:
                compared = spec.case(session, dict(case.input))
                case.reference = [{"what": c.what, "expected": summarize(c.want).to_json()} for c in compared]
        finally:
            session.close()
    except Exception:  # noqa: BLE001 - the submission's result stands without the reference's
        log.warning("no reference outputs for the %s examples", spec.slug, exc_info=True)

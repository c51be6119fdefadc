"""Helpers the four serving batteries share (paged-kv-cache, speculative-decoding, sampling, int8-kv-cache).

- `figure_test`: a named test whose pass carries a sentence with a measured figure (blocks
  used, acceptance rate, error and bytes): the verdict shows a passed test's message beside
  its name, so the figure sits with the tests without changing the verdict's JSON shape;
- `call_entry`: call a module-level entry point, failing the test with a clear sentence when
  the submission does not define it (`entry_point_call`: the same for a counted or measured call);
- `Rng`: Python and torch generators from one seed (fresh per run unless a test pins it).
"""

from __future__ import annotations

import random
import secrets
from collections.abc import Callable
from typing import Any, TypeVar

import torch

from graders.checks.report import CheckReport, Mismatch, run_test
from graders.sandbox.protocol import SubmissionError, SubmissionLink
from graders.verdict import TestResult

T = TypeVar("T")


class Rng:
    def __init__(self, seed: int | None) -> None:
        self.py = random.Random(secrets.randbits(63) if seed is None else seed)
        self.torch = torch.Generator().manual_seed(self.py.randrange(2**62))

    def randn(self, *shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=self.torch)

    def rand(self, *shape: int) -> torch.Tensor:
        return torch.rand(*shape, generator=self.torch)


def figure_test(report: CheckReport, name: str, body: Callable[[], str]) -> bool:
    """Run a named test whose body returns the figure sentence it passed with."""
    figure: list[str] = []
    passed = run_test(report, name, lambda: figure.append(body()))
    if passed:
        report.tests[-1] = TestResult(name, True, figure[0])
    return passed


def call_entry(session: SubmissionLink, name: str, *args: Any, **kwargs: Any) -> Any:
    """session.call(name, ...); a name the code does not define fails the test saying so (asked
    only once the call failed: asking first cost a round trip per call)."""
    return entry_point_call(session, name, lambda: session.call(name, *args, **kwargs))


def entry_point_call(
    session: SubmissionLink,
    name: str,
    call: Callable[[], T],
    missing: str = "your code defines no top-level `{name}`: the grader calls it by that name",
) -> T:
    """call() of the entry point `name` (plain, counted, measured); when it fails and the code
    does not define `name`, the test fails with `missing` instead (asked only then, as call_entry)."""
    try:
        return call()
    except (SubmissionError, KeyError):
        if not session.has(name):
            raise Mismatch(missing.format(name=name)) from None
        raise


def as_int_list(value: Any, what: str) -> list[int]:
    """A list (or tuple) of Python ints, or a failed test that says what came back."""
    if not isinstance(value, list | tuple) or not all(type(x) is int for x in value):
        kind = type(value).__name__
        raise Mismatch(
            f"{what} should be a list of Python ints (use .tolist() or int(...)), got {kind}: {value!r:.120}"
        )
    return list(value)

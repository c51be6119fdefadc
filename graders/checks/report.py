"""What a battery returns, and the helpers every battery uses to compare outputs."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from graders.sandbox.protocol import SubmissionError
from graders.verdict import TestResult

RTOL, ATOL = 1e-4, 1e-5  # shared/CONTRACT.md: "matches"


@dataclass
class CheckReport:
    tests: list[TestResult] = field(default_factory=list)
    diagnosis: list[str] = field(default_factory=list)

    def add(self, result: TestResult) -> TestResult:
        self.tests.append(result)
        return result

    def diagnose(self, sentence: str) -> None:
        if sentence not in self.diagnosis:
            self.diagnosis.append(sentence)


def as_tensor(value: Any, what: str) -> torch.Tensor:
    """Check that a submission's value is a real, finite tensor-like; raise Mismatch otherwise."""
    if isinstance(value, np.ndarray):
        value = torch.from_numpy(value)
    if not isinstance(value, torch.Tensor):
        raise Mismatch(f"{what} should be a tensor, got {type(value).__name__}")
    return value


class Mismatch(Exception):
    """A test's expectation failed; the message is what the user reads."""


def close(got: torch.Tensor, want: torch.Tensor) -> bool:
    return got.shape == want.shape and bool(torch.allclose(got.double(), want.double(), rtol=RTOL, atol=ATOL))


def explain_difference(got: torch.Tensor, want: torch.Tensor, what: str) -> str:
    """'{what} differs by 0.41 at index (1, 3, 0): ...' in interviewer words."""
    if got.shape != want.shape:
        return f"{what} has shape {tuple(got.shape)}, expected {tuple(want.shape)}"
    if not torch.isfinite(got).all():
        bad = tuple(int(i) for i in (~torch.isfinite(got)).nonzero()[0])
        return f"{what} contains NaN or inf (first at index {bad})"
    diff = (got.double() - want.double()).abs()
    tol = ATOL + RTOL * want.double().abs()
    first = tuple(int(i) for i in (diff > tol).nonzero()[0])
    return (
        f"{what} differs by up to {diff.max().item():.3g} (mean {diff.mean().item():.3g}); "
        f"first mismatch at index {first}: got {got[first].item():.5g}, expected {want[first].item():.5g}"
    )


def expect_close(got: Any, want: torch.Tensor, what: str) -> torch.Tensor:
    """Return the decoded tensor when it matches `want`; raise Mismatch explaining the difference."""
    tensor = as_tensor(got, what)
    if tensor.dtype != want.dtype and not tensor.is_floating_point():
        raise Mismatch(f"{what} has dtype {tensor.dtype}, expected {want.dtype}")
    if not close(tensor, want):
        raise Mismatch(explain_difference(tensor, want, what))
    return tensor


def known_mistake(got: Any, variants: Mapping[str, torch.Tensor]) -> str | None:
    """The name of the known-wrong variant the output matches, if any."""
    if not isinstance(got, torch.Tensor):
        return None
    for name, wrong in variants.items():
        if close(got, wrong):
            return name
    return None


def run_test(report: CheckReport, name: str, body: Callable[[], None]) -> bool:
    """Run one named test; a Mismatch or the submission's exception fails it with a message."""
    try:
        body()
    except Mismatch as exc:
        report.add(TestResult(name, False, str(exc)))
        return False
    except SubmissionError as exc:
        report.add(TestResult(name, False, f"your code raised {exc}"))
        return False
    report.add(TestResult(name, True))
    return True

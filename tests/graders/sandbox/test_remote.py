"""A grader's object handed to a submission (`Remote`): each property, in both backends alike.

The object stays in the grader's process (the sandbox answers the child's callbacks while it
waits for the call's reply), so what it counts is counted where the submission cannot reach.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import torch

from graders.limits import Limits
from graders.sandbox.client import shared_client
from graders.sandbox.inprocess import InProcessLink
from graders.sandbox.protocol import SubmissionError
from graders.sandbox.remote import Remote

SUBMISSION = """
import torch

def use(counter, x, times):
    out = None
    for _ in range(times):
        out = counter.add(x)
    return out

def mutate_result(counter):
    got = counter.total()
    got += 1000  # a copy: the grader's tensor is untouched
    return counter.total()

def mutate_argument(counter):
    x = torch.ones(2)
    counter.add(x)
    x += 1000  # the grader holds its own copy
    return counter.total()

def pass_back(counter):
    ref = counter.new_ref()
    again = counter.new_ref()
    return counter.same(ref, ref), counter.same(ref, again)

def not_offered(counter):
    try:
        counter.secret()
    except AttributeError as exc:
        return str(exc)
    return "called"

def refused(counter):
    try:
        counter.add(torch.ones(3))
    except ValueError as exc:
        return "ValueError: " + str(exc)
    return "accepted"

def forged(counter):
    ref = counter.new_ref()
    fake = type(ref)(object.__getattribute__(ref, "_channel"), 999, ("add",))
    try:
        fake.add(torch.ones(2))
    except ValueError as exc:
        return str(exc)
    return "accepted"

def keep_ref(counter):
    return counter.new_ref()

def change(counter):
    try:
        counter.count = 0
    except AttributeError:
        return "refused"
    return "changed"
"""


class Counter:
    """A grader-side object: counts its calls and refuses the wrong shape."""

    def __init__(self) -> None:
        self.count = 0
        self.refused = 0
        self._total = torch.zeros(2)
        self.secret_called = False
        self.refs: list[object] = []

    def add(self, x: Any) -> torch.Tensor:
        if not isinstance(x, torch.Tensor) or x.shape != (2,):
            self.refused += 1
            raise ValueError(f"add takes a tensor of shape (2,), got {getattr(x, 'shape', type(x))}")
        self.count += 1
        self._total += x
        return self._total

    def total(self) -> torch.Tensor:
        return self._total

    def new_ref(self) -> Remote:
        ref = Remote(object())
        self.refs.append(ref.obj)
        return ref

    def same(self, a: object, b: object) -> bool:
        return a is b and a in self.refs

    def secret(self) -> None:
        self.secret_called = True


METHODS = ("add", "total", "new_ref", "same")


@pytest.fixture(params=["inprocess", "sandbox"])
def session(request: pytest.FixtureRequest) -> Iterator[Any]:
    if request.param == "inprocess":
        yield InProcessLink(SUBMISSION)
        return
    session = shared_client().open(Limits())
    try:
        session.load(SUBMISSION)
        yield session
    finally:
        session.close()


def test_calls_reach_the_grader_object_and_are_counted_there(session: Any) -> None:
    counter = Counter()
    got = session.call("use", Remote(counter, METHODS), torch.ones(2), 5)
    assert counter.count == 5 and torch.equal(got, torch.full((2,), 5.0))
    assert session.remotes.callbacks == 5


def test_results_and_arguments_are_copies(session: Any) -> None:
    counter = Counter()
    assert torch.equal(session.call("mutate_result", Remote(counter, METHODS)), torch.zeros(2))
    assert torch.equal(session.call("mutate_argument", Remote(counter, METHODS)), torch.ones(2))
    assert torch.equal(counter.total(), torch.ones(2))


def test_a_reference_handed_back_is_the_same_grader_object(session: Any) -> None:
    assert session.call("pass_back", Remote(Counter(), METHODS)) == (True, False)


def test_a_method_not_offered_is_refused_and_never_runs(session: Any) -> None:
    counter = Counter()
    message = session.call("not_offered", Remote(counter, METHODS))
    assert "offers add, total, new_ref, same, not 'secret'" in message and not counter.secret_called


def test_the_grader_method_refusing_raises_its_error_in_the_submission(session: Any) -> None:
    counter = Counter()
    message = session.call("refused", Remote(counter, METHODS))
    assert message == "ValueError: add takes a tensor of shape (2,), got torch.Size([3])"
    assert counter.refused == 1 and counter.count == 0


def test_a_made_up_reference_is_refused(session: Any) -> None:
    counter = Counter()
    assert "no object of the grader's has the reference 999" in session.call(
        "forged", Remote(counter, METHODS)
    )
    assert counter.count == 0


def test_a_reference_returned_to_the_check_is_the_grader_object(session: Any) -> None:
    counter = Counter()
    assert session.call("keep_ref", Remote(counter, METHODS)) is counter.refs[0]


def test_the_proxy_cannot_change_the_grader_object(session: Any) -> None:
    counter = Counter()
    counter.count = 7
    assert session.call("change", Remote(counter, METHODS)) == "refused" and counter.count == 7


def test_remote_methods_must_be_public_names() -> None:
    with pytest.raises(ValueError, match="public identifiers"):
        Remote(Counter(), ("_total",))


def test_a_submission_raising_after_a_callback_is_still_a_submission_error(session: Any) -> None:
    with pytest.raises(SubmissionError):
        session.call("use", Remote(Counter(), METHODS), torch.ones(3), 1)  # ValueError, not caught

"""The sandbox session behaves like the in-process double the checks are unit-tested with."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import torch

from graders.limits import Limits
from graders.sandbox.client import shared_client
from graders.sandbox.inprocess import InProcessLink
from graders.sandbox.protocol import Handle, LimitExceeded, LoadError, SubmissionError

SUBMISSION = """
import numpy as np
import torch

class Box:
    def __init__(self, value):
        self.value = value

    def add(self, x):
        self.value = self.value + x
        return self.value

def ident(x):
    return x

def scalars():
    return np.float64(1.5), np.int64(3), np.bool_(True)

def boom():
    raise ValueError("bad input")

def make_box(value):
    return Box(value)

def read(d, key):
    return d[key]

def scaled(a, *, scale=1):
    return a * scale

def mixed():
    return {"box": Box(1), "t": torch.ones(2)}

def chatty():
    print("hello from the submission")
    return 1

def no_room():
    raise MemoryError("no free blocks")

class Buffer:
    def __init__(self):
        self.data = torch.zeros(4)

    def write(self, i, x):
        self.data[i] = x
        return self.data[: i + 1]  # a view: later writes show in it
"""

VALUES: list[Any] = [
    None,
    True,
    3,
    -(2**70),
    2.5,
    float("inf"),
    "text é",
    [1, (2, 3), []],
    (),
    {"a": 1, 2: "b"},
    torch.randn(3, 4),
    torch.float64,
    torch.arange(6).reshape(2, 3),
    torch.tensor([True, False]),
    torch.randn(2, 3).to(torch.bfloat16),
    torch.randn(4, 5).t(),  # not contiguous
    torch.zeros(0, 3),
    torch.tensor(1.25),
    np.random.default_rng(0).standard_normal((2, 3)),
    np.arange(5, dtype=np.int32),
    np.array([True, False, True]),
    {"k": torch.ones(2, 2), "v": [np.zeros(3)]},
]


def same(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, torch.Tensor):
        return a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return bool(a == b)


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


def test_has_sees_top_level_names(session: Any) -> None:
    assert session.has("ident") and session.has("Box")
    assert not session.has("missing")


@pytest.mark.parametrize("value", VALUES, ids=lambda v: type(v).__name__)
def test_data_round_trips_unchanged(session: Any, value: Any) -> None:
    assert same(session.call("ident", value), value)


def test_results_are_copies(session: Any) -> None:
    box = session.call("make_box", torch.zeros(3), keep=True)
    first = session.call(box.add, torch.ones(3))
    first += 100
    assert torch.equal(session.call(box.add, torch.ones(3)), torch.full((3,), 2.0))


def test_numpy_scalars_come_back_as_python_scalars(session: Any) -> None:
    assert session.call("scalars") == (1.5, 3, True)
    assert [type(v) for v in session.call("scalars")] == [float, int, bool]


def test_a_raise_is_a_submission_error(session: Any) -> None:
    with pytest.raises(SubmissionError) as info:
        session.call("boom")
    assert (info.value.type_name, info.value.message) == ("ValueError", "bad input")


def test_objects_stay_behind_a_handle(session: Any) -> None:
    box = session.call("make_box", 10)
    assert isinstance(box, Handle)
    assert session.call(box.add, 5) == 15
    assert session.call(box.add, x=1) == 16


def test_keep_returns_a_handle_even_for_data(session: Any) -> None:
    kept = session.call("ident", torch.ones(2), keep=True)
    assert isinstance(kept, Handle)
    assert torch.equal(session.get(kept), torch.ones(2))


def test_keep_both_keeps_the_result_and_sends_it_too(session: Any) -> None:
    """What a check re-reads later (kv-cache-buffer's views) and also compares now."""
    handle, value = session.call("ident", torch.arange(3.0), keep="both")
    assert isinstance(handle, Handle) and torch.equal(value, torch.arange(3.0))
    box = session.new_dict({"x": handle})
    assert torch.equal(session.get(box)["x"], torch.arange(3.0))


def test_mixed_results_keep_only_what_is_not_data(session: Any) -> None:
    result = session.call("mixed")
    assert isinstance(result["box"], Handle) and torch.equal(result["t"], torch.ones(2))


def test_dicts_live_in_the_submission(session: Any) -> None:
    cache = session.new_dict({"k": torch.ones(2)})
    session.setitem(cache, "v", torch.zeros(2))
    assert torch.equal(session.call("read", cache, "v"), torch.zeros(2))
    got = session.get(cache)
    assert set(got) == {"k", "v"} and torch.equal(got["k"], torch.ones(2))


def test_get_refuses_what_is_not_data(session: Any) -> None:
    box = session.call("make_box", 1)
    with pytest.raises(TypeError):
        session.get(box)


def test_keyword_arguments_pass_through(session: Any) -> None:
    assert torch.equal(session.call("scaled", torch.ones(2), scale=3), torch.full((2,), 3.0))


def test_output_is_captured(session: Any) -> None:
    session.call("chatty")
    assert "hello from the submission" in session.output()


@pytest.mark.parametrize(
    "code", ["def broken(:\n", "import not_a_module_anywhere\n", "raise RuntimeError('top')\n"]
)
def test_load_errors_name_the_problem_and_line(code: str) -> None:
    with pytest.raises(LoadError) as inproc:
        InProcessLink(code)
    session = shared_client().open(Limits())
    try:
        with pytest.raises(LoadError) as sandboxed:
            session.load(code)
    finally:
        session.close()
    assert type(inproc.value) is type(sandboxed.value)
    assert str(inproc.value).split(":")[0] == str(sandboxed.value).split(":")[0]
    assert "line 1" in str(sandboxed.value)


def test_bytes_written_to_stdout_buffer_are_captured_too() -> None:
    with shared_client().open(Limits()) as session:
        session.load("import sys\ndef shout():\n    sys.stdout.buffer.write(b'raw bytes')\n    return 1\n")
        session.call("shout")
        assert "raw bytes" in session.output()


def test_a_memory_error_can_be_an_answer_when_the_check_expects_one(session: Any) -> None:
    with pytest.raises(SubmissionError) as info:
        session.call("no_room", memory_error_is_data=True)
    assert (info.value.type_name, info.value.message) == ("MemoryError", "no free blocks")
    assert session.call("ident", 3) == 3  # the session goes on


def test_a_queued_memory_error_can_be_an_answer_too(session: Any) -> None:
    """call_later(..., memory_error_is_data=True): paged-kv-cache queues its appends, one of which
    may run out of blocks after an earlier call lost some (whose check then names the mistake)."""
    before = session.call_later("ident", 2)
    failing = session.call_later("no_room", memory_error_is_data=True)
    assert before.value() == 2
    with pytest.raises(SubmissionError) as info:
        failing.value()
    assert (info.value.type_name, info.value.message) == ("MemoryError", "no free blocks")
    assert session.call("ident", 3) == 3  # the session goes on


def test_otherwise_a_memory_error_ends_the_session_at_the_memory_limit() -> None:
    with shared_client().open(Limits()) as session:
        session.load(SUBMISSION)
        with pytest.raises(LimitExceeded) as info:
            session.call("no_room")
        assert info.value.verdict == "memory_limit"


def test_queued_calls_answer_like_calls(session: Any) -> None:
    """call_later: every value as `call` returns it, tensors of several calls kept apart."""
    values = [torch.randn(3, 4), np.arange(5, dtype=np.int32), {"k": torch.ones(2)}, 7]
    replies = [session.call_later("ident", value) for value in values]
    cache = session.new_dict({"k": torch.zeros(2)})
    session.setitem(cache, "v", torch.full((2,), 5.0))
    last = session.call_later("read", cache, "v")
    assert all(same(reply.value(), value) for reply, value in zip(replies, values, strict=True))
    assert torch.equal(last.value(), torch.full((2,), 5.0))


def test_a_queued_call_answers_with_what_it_returned_before_later_calls_of_its_batch(session: Any) -> None:
    """A view one queued call returns is read as it was then, as a lone call's answer would be,
    not after a later call of the same round trip wrote into it (kv-cache-buffer's updates)."""
    buffer = session.call("Buffer", keep=True)
    first = session.call_later(buffer.write, 1, 1.0, keep="both")
    second = session.call_later(buffer.write, 1, 2.0)
    handle, value = first.value()
    assert isinstance(handle, Handle) and value.tolist() == [0.0, 1.0]
    assert second.value().tolist() == [0.0, 2.0]
    assert session.get(session.new_dict({"view": handle}))["view"].tolist() == [0.0, 2.0]  # still a view


def test_queued_measured_calls_answer_like_measured_calls_in_one_round_trip(session: Any) -> None:
    """call_measured_later: (result, largest float tensor) per call as call_measured says it, every
    call of a test in one request (mla-decode queues its decode steps so)."""
    small, large = torch.randn(3, 4), torch.randn(40, 50)
    trips = getattr(
        session, "round_trips", None
    )  # the sandbox counts them; in-process calls are made at once
    answers = [session.call_measured_later("scaled", t, scale=2.0) for t in (small, large)]
    failing = session.call_measured_later("boom")
    (got_small, largest_small), (got_large, largest_large) = (a.value() for a in answers)
    assert torch.equal(got_small, small * 2) and largest_small == small.numel()
    assert torch.equal(got_large, large * 2) and largest_large == large.numel()
    with pytest.raises(SubmissionError):
        failing.value()
    if trips is not None:
        assert session.round_trips == trips + 1
    assert session.call_measured("scaled", small, scale=2.0)[1] == largest_small


def test_a_queued_call_that_raises_raises_from_its_value(session: Any) -> None:
    before = session.call_later("ident", torch.ones(2))
    failing = session.call_later("boom")
    assert torch.equal(before.value(), torch.ones(2))
    with pytest.raises(SubmissionError) as info:
        failing.value()
    assert info.value.type_name == "ValueError"
    assert session.call("ident", 3) == 3  # the session goes on


def test_queued_requests_go_out_in_one_round_trip() -> None:
    """Steps of a decode battery: two setitems and the step, queued, cost one round trip in all."""
    session = shared_client().open(Limits())
    try:
        session.load(SUBMISSION)
        before = session.round_trips
        cache = session.new_dict()
        replies = []
        for i in range(5):
            session.setitem(cache, "k", torch.full((2,), float(i)))
            session.setitem(cache, "v", torch.zeros(2))
            replies.append(session.call_later("read", cache, "k"))
        assert [float(reply.value()[0]) for reply in replies] == [0.0, 1.0, 2.0, 3.0, 4.0]
        assert session.round_trips - before == 1
        failing = session.call_later("boom")
        never_made = session.call_later("ident", 1)
        with pytest.raises(SubmissionError):
            never_made.value()  # stopped by the call before it, in the same round trip
        with pytest.raises(SubmissionError):
            failing.value()
        assert session.round_trips - before == 2
    finally:
        session.close()


def test_an_item_the_object_refuses_raises_from_the_next_request() -> None:
    session = shared_client().open(Limits())
    try:
        session.load(SUBMISSION)
        box = session.call("make_box", 1)  # a Box has no __setitem__
        session.setitem(box, "k", 1)  # held back: nothing to answer yet
        with pytest.raises(SubmissionError) as info:
            session.call("ident", 1)
        assert info.value.type_name == "TypeError"
        assert session.call("ident", 2) == 2
    finally:
        session.close()

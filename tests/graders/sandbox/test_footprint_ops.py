"""Footprint operations (measured calls, storages, dtypes on the wire), in-process and in the sandbox."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import torch

from graders.limits import Limits
from graders.sandbox.client import shared_client
from graders.sandbox.inprocess import InProcessLink
from graders.sandbox.protocol import SubmissionError, measured_reply, storages_reply

SUBMISSION = """
import torch

class Buffer:
    def __init__(self, n, dtype=torch.float32):
        self.data = torch.zeros(n, dtype=dtype)

    def grow(self, x):
        self.data = torch.cat([self.data, x])
        return self.data.shape[0]

    def write(self, x):
        self.data[: x.shape[0]] = x
        return self.data.dtype == torch.float64

def full_scores(q, k):
    return torch.softmax(q @ k.T, dim=-1).sum()

def blocked_scores(q, k, block):
    return sum((q @ k[i : i + block].T).sum() for i in range(0, k.shape[0], block))
"""


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


def test_a_measured_call_reports_the_largest_float_tensor(session: Any) -> None:
    q, k = torch.randn(32, 4), torch.randn(48, 4)
    _, full = session.call_measured("full_scores", q, k)
    _, blocked = session.call_measured("blocked_scores", q, k, 8)
    assert full == 32 * 48 and blocked == 32 * 8


def test_storages_see_a_cache_grow_and_a_dtype_arrives_as_a_dtype(session: Any) -> None:
    buffer = session.call("Buffer", 6, dtype=torch.float64, keep=True)
    before = session.storages(buffer)
    assert [n for _, n in before] == [48]
    is_double, after = session.call_and_storages(buffer.write, torch.ones(2, dtype=torch.float64), of=buffer)
    assert is_double is True and after == before
    _, grown = session.call_and_storages(buffer.grow, torch.ones(2, dtype=torch.float64), of=buffer)
    assert [n for _, n in grown] == [64] and grown != before


@pytest.mark.parametrize("reply", [None, [1], [1, -1], [1, 2.0], "x"])
def test_a_tampered_measured_reply_is_the_submissions_error(reply: Any) -> None:
    with pytest.raises(SubmissionError):
        measured_reply(reply)


@pytest.mark.parametrize("reply", [None, [[1]], [[1, -2]], [[1, 2.5]], [(1, 2)]])
def test_a_tampered_storages_reply_is_the_submissions_error(reply: Any) -> None:
    with pytest.raises(SubmissionError):
        storages_reply(reply)

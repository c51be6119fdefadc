"""Verdict wording a user reads: no dangling colon after an exception that has no message, and no
"0x the right answer" for a zero (through the real grader and sandbox); and the one pluraliser
and exception formatter every message uses."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from app.services.scheduling import humanize_interval
from graders.runner import grade
from graders.wording import describe, exception_text, plural

ZERO = """
def kv_cache_bytes(n_layers, n_kv_heads, head_dim, seq_len, batch=1, bytes_per_element=2):
    return 0

def kv_cache_bytes_from_config(config, seq_len, batch=1, bytes_per_element=2):
    return 0
"""
BARE_RAISE = ZERO.replace("return 0", "raise ValueError()")


def _messages(code: str) -> list[str]:
    result = grade("kv-cache-bytes", code)
    return [t.message for t in result.tests if not t.passed]


def test_a_zero_answer_gives_no_zero_ratio() -> None:
    messages = _messages(ZERO)
    assert any("got 0 bytes" in m for m in messages), messages
    assert not any("0x the right answer" in m for m in messages), messages


def test_an_exception_without_a_message_has_no_trailing_colon() -> None:
    messages = _messages(BARE_RAISE)
    assert any("your code raised ValueError" in m for m in messages), messages
    assert not any("ValueError:" in m for m in messages), messages


@pytest.mark.parametrize(
    ("count", "word", "many", "text"),
    [
        (1, "minute", None, "1 minute"),
        (0, "minute", None, "0 minutes"),
        (2, "question", None, "2 questions"),
        (1.0, "month", None, "1 month"),
        (2.5, "month", None, "2.5 months"),
        (1024, "token", None, "1,024 tokens"),
        (1, "entry", "entries", "1 entry"),
        (3, "entry", "entries", "3 entries"),
    ],
)
def test_plural(count: float, word: str, many: str | None, text: str) -> None:
    assert plural(count, word, many) == text


@pytest.mark.parametrize(
    ("name", "message", "parens", "text"),
    [
        ("ValueError", "bad shape", False, "ValueError: bad shape"),
        ("ValueError", "", False, "ValueError"),
        ("ValueError", "  ", False, "ValueError"),
        ("MemoryError", "", True, "MemoryError"),
        ("KeyError", "'x'", True, "KeyError ('x')"),
    ],
)
def test_exception_text_has_no_dangling_colon_or_empty_parens(
    name: str, message: str, parens: bool, text: str
) -> None:
    assert exception_text(name, message, parens=parens) == text


def test_describe_an_exception_with_and_without_a_message() -> None:
    assert describe(IndexError("index out of range in self")) == "IndexError: index out of range in self"
    assert describe(NotImplementedError()) == "NotImplementedError"


@pytest.mark.parametrize(
    ("days", "text"),
    [(1, "1 day"), (2, "2 days"), (31, "1 month"), (45, "1.5 months"), (365, "1 year"), (800, "2.2 years")],
)
def test_review_intervals_read_as_words(days: float, text: str) -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    assert humanize_interval(now + timedelta(days=days), now) == text

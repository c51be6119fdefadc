"""Verdict wording a user reads: no dangling colon after an exception that has no message, and no
"0x the right answer" for a zero. Through the real grader and sandbox."""

from __future__ import annotations

from graders.runner import grade

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

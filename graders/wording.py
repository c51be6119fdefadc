"""Counts and exceptions in words, the same way in every message (the app's pages use it too).

"1 minute" and "2 minutes", never "1 minutes"; "ValueError" alone when an exception came with no
message, never "ValueError:" with nothing after the colon.
"""

from __future__ import annotations


def plural(count: float, word: str, many: str | None = None) -> str:
    """The count with its noun: '1 minute', '0 minutes', '2.5 months', '1,024 tokens'.

    `many` is the plural where adding "s" is wrong ("1 entry", "2 entries").
    """
    number = f"{count:,}" if isinstance(count, int) else f"{count:,.10g}"
    return f"{number} {word if count == 1 else (many or word + 's')}"


def exception_text(type_name: str, message: str, *, parens: bool = False) -> str:
    """'ValueError: bad shape' (or 'ValueError (bad shape)'), 'ValueError' when there is no message."""
    message = message.strip()
    if not message:
        return type_name
    return f"{type_name} ({message})" if parens else f"{type_name}: {message}"


def describe(exc: BaseException) -> str:
    """An exception as a message line: its type's name, then its message when it has one."""
    return exception_text(type(exc).__name__, str(exc))

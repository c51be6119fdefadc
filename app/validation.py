"""Input types every route shares: bounded ids, no NUL characters, empty meaning "not set".

Ids and positions are bounded to PostgreSQL's INTEGER (2^31 - 1): a larger number cannot name
a row, and unbounded it overflows SQLite's 64-bit integers or PostgreSQL's INTEGER inside the
driver (a 500 instead of a 404). NUL characters cannot be stored in PostgreSQL text, and no
answer, email or code needs one: they are refused with 422 like any other invalid field.
"""

from __future__ import annotations

from datetime import date
from typing import Annotated, Any

from fastapi import Path
from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, StrictInt, field_validator

from app.config import Settings
from app.services.errors import TooLarge

MAX_ID = 2**31 - 1


def _no_nul(value: Any) -> Any:
    """Walks strings, lists and dicts: pydantic runs this after the field's own validation."""
    if isinstance(value, str):
        if "\x00" in value:
            raise ValueError("NUL characters are not allowed")
    elif isinstance(value, list | tuple):
        for item in value:
            _no_nul(item)
    elif isinstance(value, dict):
        for key, item in value.items():
            _no_nul(key)
            _no_nul(item)
    return value


def reject_nul(value: str) -> str:
    _no_nul(value)
    return value


def _empty_is_none(value: Any) -> Any:
    return None if value == "" else value


# A JSON body: unknown fields refused, no NUL anywhere in it.
class ApiModel(BaseModel):
    model_config = ConfigDict(extra="forbid")

    @field_validator("*", mode="after")
    @classmethod
    def _refuse_nul(cls, value: Any) -> Any:
        return _no_nul(value)


# Path ids of rows (quizzes, mock interviews) and positions inside them.
RowId = Annotated[int, Path(ge=1, le=MAX_ID)]
Position = Annotated[int, Path(ge=0, le=MAX_ID)]
# A position in a JSON body.
BodyPosition = Annotated[StrictInt, Field(ge=0, le=MAX_ID)]
# An index into a question's options or key points, as a JSON body sends it: an integer, never
# `false` or "1" (pydantic's lax ints would take both, and the document says integer).
BodyIndex = Annotated[StrictInt, Field(ge=0, le=1_000)]
# An optional choice a form or client may send as "" for "not set" (a select left on "Any").
EmptyIsNone = BeforeValidator(_empty_is_none)


def _date_text(value: Any) -> Any:
    """A date in JSON is its ISO text, as the schema says: pydantic would read 0 as 1970-01-01."""
    if not isinstance(value, str | date):
        raise ValueError("Send the date as YYYY-MM-DD")
    return value


IsoDate = Annotated[date, BeforeValidator(_date_text)]


def _utf8_text(code: str) -> str:
    """Code must be text UTF-8 can hold: a lone surrogate ("\\ud800" in JSON) cannot be stored or run."""
    try:
        code.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(
            f"the code holds a lone surrogate (U+{ord(code[exc.start]):04X}) at character {exc.start}, "
            "which is not text: remove it"
        ) from None
    return code


# Python source as the API takes it: any text that UTF-8 can encode.
SourceCode = Annotated[str, AfterValidator(_utf8_text)]


# The body of a code submission, on a challenge's page or in a mock interview.
class CodeSubmission(ApiModel):
    code: SourceCode = Field(description="Python source defining the challenge's entry point")


def refuse_oversized(code: str, settings: Settings) -> None:
    """413 for code over the size limit (counted in UTF-8 bytes, lone surrogates included)."""
    if len(code.encode("utf-8", "surrogatepass")) > settings.max_code_bytes:
        raise TooLarge(f"Code is over {settings.max_code_bytes // 1024} KiB")

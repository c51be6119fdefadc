"""The base of every JSON response model the API documents in /docs.

Response models describe the JSON the routes already build (CONTRACT.md fixes it): they type
it for /docs and for clients, and change nothing in it. Two rules keep it unchanged:

- timestamps stay the strings the builders write (`datetime.isoformat()`), typed `Timestamp`,
  because pydantic would write UTC as "Z" where the API has always written "+00:00";
- a model names every key its JSON may carry, and refuses any other (`extra="forbid"`): a
  builder that writes a key the model does not name fails its tests instead of losing the key
  or sending one /docs does not show. Keys that appear only in some states (a quiz item's answer
  once revealed) are optional here, and the routes answer with `response_model_exclude_unset=True`
  so that an absent key stays absent rather than null.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from datetime import datetime
from types import UnionType
from typing import Annotated, Any, Union, get_args, get_origin, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, create_model

Timestamp = Annotated[str, Field(description="ISO 8601 date and time, as datetime.isoformat() writes it")]


# The base of the API's response models (see the module's docstring).
class Public(BaseModel):
    model_config = ConfigDict(extra="forbid")


# A number as the builder gave it: an int stays an int (pydantic would write 8192 as 8192.0 for a float).
Number = int | float


# Field types to narrow in derived models: dataclass -> field name -> type (a StrEnum for a `str` kind).
Overrides = Mapping[type, Mapping[str, Any]]


def public_model(cls: type, name: str, prefix: str, overrides: Overrides | None = None) -> type[Public]:
    """The response model of a service's dataclass that its JSON is `asdict` of, field for field.

    Written from the dataclass itself, so a field a service adds is documented the day it is added
    and nothing is written twice; a datetime becomes its `Timestamp` string, a float a `Number`,
    a nested dataclass its own model (named `prefix` + its class's name), and `overrides` give a
    field a narrower type.
    """
    overrides = overrides or {}
    narrower = overrides.get(cls, {})
    hints = get_type_hints(cls)
    fields: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        annotation = narrower.get(f.name) or _public_type(hints[f.name], prefix, overrides)
        if f.default is not dataclasses.MISSING:
            fields[f.name] = (annotation, f.default)
        elif f.default_factory is not dataclasses.MISSING:
            fields[f.name] = (annotation, Field(default_factory=f.default_factory))
        else:
            fields[f.name] = (annotation, ...)
    model: type[Public] = create_model(name, __base__=Public, __doc__=cls.__doc__, **fields)
    return model


def _public_type(annotation: Any, prefix: str, overrides: Overrides) -> Any:
    if annotation is datetime:
        return Timestamp
    if annotation is float:
        return Number
    if dataclasses.is_dataclass(annotation) and isinstance(annotation, type):
        return public_model(annotation, prefix + annotation.__name__, prefix, overrides)
    args = get_args(annotation)
    if get_origin(annotation) is list:
        return list[_public_type(args[0], prefix, overrides)]  # type: ignore[misc]
    if get_origin(annotation) in (Union, UnionType):
        return Union[tuple(_public_type(a, prefix, overrides) for a in args)]  # noqa: UP007 - built from a tuple
    return annotation

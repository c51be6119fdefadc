"""The base of every JSON response model the API documents in /docs.

Response models describe the JSON the routes already build (CONTRACT.md fixes it): they type
it for /docs and for clients, and change nothing in it. Two rules keep it unchanged:

- timestamps stay the strings the builders write (`datetime.isoformat()`), typed `Timestamp`,
  because pydantic would write UTC as "Z" where the API has always written "+00:00";
- a key the models do not name yet is kept, not dropped (`extra="allow"`): a service that adds
  a key to its JSON must not lose it silently on the way out. Keys that appear only in some
  states (a quiz item's answer once revealed) are optional here, and the routes answer with
  `response_model_exclude_unset=True` so that an absent key stays absent rather than null.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

Timestamp = Annotated[str, Field(description="ISO 8601 date and time, as datetime.isoformat() writes it")]


# The base of the API's response models (see the module's docstring).
class Public(BaseModel):
    model_config = ConfigDict(extra="allow")


# A number as the builder gave it: an int stays an int (pydantic would write 8192 as 8192.0 for a float).
Number = int | float

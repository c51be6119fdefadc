"""POST /api/key-points/suggest: which of a card's key points a typed answer seems to cover.

The quiz and mock pages get their suggestions with the answer they submit (no JavaScript
needed); this endpoint is the same matcher for a client that wants a suggestion before it
submits anything. It reveals nothing a card page does not already show.
"""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel, Field

from app.deps import SessionDep
from app.routes.refusals import refusals
from app.services.cards import get_card
from app.services.errors import NotFound
from app.services.key_point_matcher import MAX_TEXT, Method
from app.services.key_point_suggestions import suggest_for_card

router = APIRouter(prefix="/api/key-points", tags=["key points"])


class SuggestIn(BaseModel):
    card_id: str = Field(min_length=1, max_length=80, pattern=r"^[a-z0-9-]+$")
    text: str = Field(max_length=MAX_TEXT)


class SuggestOut(BaseModel):
    card_id: str
    points: list[int] = Field(description="indexes of the key points the answer seems to cover")
    method: Method = Field(description="semantic (the embedding model) or lexical (its fallback)")
    scores: list[float] = Field(description="one per key point, in the method's own scale")


# A plain function: FastAPI runs it in its thread pool, so loading the model on first use and
# encoding the answer never block the event loop.
@router.post("/suggest", responses=refusals(NotFound))
def suggest_points(body: SuggestIn, session: SessionDep) -> SuggestOut:
    card = get_card(session=session, card_id=body.card_id)
    if card is None or card.retired:
        raise NotFound(f"No card {body.card_id!r}")
    got = suggest_for_card(card, body.text)
    return SuggestOut(card_id=card.id, points=got.points, method=got.method, scores=got.scores)

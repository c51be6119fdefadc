"""The Anki export (GET /api/export/anki): cards as an .apkg, for the buttons on /cards and /progress.

The cards page's button exports the list as filtered (topic, difficulty); the progress page's, the
visitor's due cards. A download, like the account's JSON export: the file is the response.
"""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response

from app.deps import ClockDep, SessionDep, SettingsDep, SiteDep, Visitor
from app.routes.refusals import refusals
from app.services.anki_export import MEDIA_TYPE, AnkiSelection, export_anki
from app.services.errors import NotReady

router = APIRouter(prefix="/api/export", tags=["export"])


@router.get(
    "/anki",
    response_class=Response,
    responses={
        200: {
            "content": {MEDIA_TYPE: {"schema": {"type": "string", "format": "binary"}}},
            "description": "An Anki package (a zip holding an SQLite database), as a download",
        },
        **refusals(NotReady),
    },
)
def anki_export(
    user: Visitor,
    session: SessionDep,
    settings: SettingsDep,
    site: SiteDep,
    clock: ClockDep,
    topic: Annotated[str | None, Query(pattern=r"^([a-z0-9-]{1,80})?$")] = None,  # empty: no filter
    difficulty: Annotated[Literal["easy", "medium", "hard"] | None, Query()] = None,
    due: Annotated[bool, Query(description="only the visitor's due cards (and today's new ones)")] = False,
) -> Response:
    """The cards as an Anki package: one note per card, ids stable across exports (a re-import
    updates the notes), tags per topic and difficulty. 409 when the selection holds no card."""
    if topic and site.topic(topic) is None:
        raise RequestValidationError(
            [{"loc": ("query", "topic"), "msg": f"Unknown topic {topic!r}", "type": "value_error"}]
        )
    selection = AnkiSelection(topic=topic, difficulty=difficulty, due=due)
    now = clock.now()
    package, notes = export_anki(session=session, selection=selection, user=user, settings=settings, now=now)
    name = selection.file_name(now.date().isoformat())
    return Response(
        package,
        media_type=MEDIA_TYPE,
        headers={
            "Content-Disposition": f'attachment; filename="{name}"',
            # A due export is personal, and every export is as of now.
            "Cache-Control": "no-store",
            "X-Kvprep-Notes": str(notes),
        },
    )

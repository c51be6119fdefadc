"""Opens an Anki package the way Anki does: a zip holding `collection.anki2`, an SQLite database."""

from __future__ import annotations

import io
import json
import sqlite3
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FIELD_SEPARATOR = "\x1f"


@dataclass(frozen=True)
class ApkgNote:
    guid: str
    model_id: int
    modified: int
    tags: list[str]
    fields: dict[str, str]  # field name -> HTML
    deck_ids: list[int]  # the decks of its cards


@dataclass(frozen=True)
class Apkg:
    notes: list[ApkgNote]
    models: dict[int, dict[str, Any]]
    decks: dict[int, dict[str, Any]]

    def by_card(self) -> dict[str, ApkgNote]:
        return {note.fields["Card"]: note for note in self.notes}


def read_apkg(data: bytes) -> Apkg:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        assert "collection.anki2" in archive.namelist(), archive.namelist()
        collection = archive.read("collection.anki2")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "collection.anki2"
        path.write_bytes(collection)
        db = sqlite3.connect(path)
        try:
            models_json, decks_json = db.execute("SELECT models, decks FROM col").fetchone()
            models = {int(k): v for k, v in json.loads(models_json).items()}
            decks = {int(k): v for k, v in json.loads(decks_json).items()}
            card_decks: dict[int, list[int]] = {}
            for note_id, deck_id in db.execute("SELECT nid, did FROM cards"):
                card_decks.setdefault(note_id, []).append(deck_id)
            notes = []
            for note_id, guid, mid, mod, tags, flds in db.execute(
                "SELECT id, guid, mid, mod, tags, flds FROM notes"
            ):
                names = [f["name"] for f in sorted(models[mid]["flds"], key=lambda f: f["ord"])]
                notes.append(
                    ApkgNote(
                        guid=guid,
                        model_id=mid,
                        modified=mod,
                        tags=tags.split(),
                        fields=dict(zip(names, flds.split(FIELD_SEPARATOR), strict=True)),
                        deck_ids=card_decks.get(note_id, []),
                    )
                )
        finally:
            db.close()
    return Apkg(notes=notes, models=models, decks=decks)

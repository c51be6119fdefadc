"""Sync the question bank (files) into the database, idempotently.

An edited file updates its card; a new file adds one; a removed file *retires* its
card (hidden from lists, kept so nobody's history points at nothing). Loading is
all or nothing: a broken bank raises ContentError before anything is written.
"""

from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlmodel import Session, select

from app.content.loader import Bank, load_bank
from app.content.schema import Card as CardFile
from app.models import Card, Topic, utcnow
from app.services.card_search import index_rows, indexed_count, rebuild_index


@dataclass(frozen=True)
class SyncReport:
    added: int
    updated: int
    retired: int
    unchanged: int

    def __str__(self) -> str:
        return (
            f"{self.added} added, {self.updated} updated, {self.retired} retired, {self.unchanged} unchanged"
        )


def _card_data(card: CardFile) -> dict[str, Any]:
    return card.model_dump(mode="json", exclude={"path"})


def _hash(data: dict[str, Any], path: str) -> str:
    return hashlib.sha256(json.dumps([data, path], sort_keys=True).encode()).hexdigest()


def _card_fields(card: CardFile) -> dict[str, Any]:
    """A card's row as the files say it should be (its content hash included)."""
    data = _card_data(card)
    return dict(
        title=card.title,
        topic=card.topic,
        difficulty=card.difficulty.value,
        tags=list(card.tags),
        data=data,
        search_text=card.search_text().lower(),
        content_hash=_hash(data, card.path),
        path=card.path,
        # A superseded card keeps its row (and everyone's history of it) but leaves the lists.
        retired=card.superseded_by is not None,
    )


# The rows of the last banks synced, by identity: a loaded bank is never changed in place (an
# edit is a new load), and a process that starts several apps on one catalog (the test suite, a
# server and its CLI) hashes and indexes its 200-odd cards once instead of on every start.
_PREPARED: dict[int, tuple[Bank, list[dict[str, Any]], list[dict[str, str]]]] = {}
_PREPARED_KEPT = 4


def _prepared(bank: Bank) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    kept = _PREPARED.get(id(bank))
    if kept is None or kept[0] is not bank:
        while len(_PREPARED) >= _PREPARED_KEPT:
            _PREPARED.pop(next(iter(_PREPARED)))
        kept = _PREPARED[id(bank)] = (bank, [_card_fields(c) for c in bank.cards], index_rows(bank.cards))
    return kept[1], kept[2]


def sync_bank(*, session: Session, bank: Bank) -> SyncReport:
    topic_rows = {t.slug: t for t in session.exec(select(Topic)).all()}
    for position, topic in enumerate(bank.topics):
        topic_row = topic_rows.get(topic.slug)
        if topic_row is None:
            session.add(Topic(slug=topic.slug, title=topic.title, summary=topic.summary, position=position))
        else:
            topic_row.title, topic_row.summary, topic_row.position = topic.title, topic.summary, position
    session.flush()

    # Each card's stamp (its content hash and whether it is retired) decides what to do; a whole
    # row (its JSON data, tags and search text) is loaded only for a card that changed. A start
    # on an unchanged bank, the usual one, reads three columns: loading every row was the largest
    # part of an app's start (7% of the route tests' CPU, which start an app per test).
    stamp_rows = session.exec(select(Card.id, Card.content_hash, Card.retired)).all()
    stamps = {card_id: (digest, was_retired) for card_id, digest, was_retired in stamp_rows}
    added = updated = unchanged = retired = 0
    prepared, search_rows = _prepared(bank)
    for card, fields in zip(bank.cards, prepared, strict=True):
        stamp = stamps.pop(card.id, None)
        if stamp is None:
            # A copy: the row owns its tags and data, the memo stays as the files say.
            session.add(Card(id=card.id, **copy.deepcopy(fields)))
            added += 1
        elif stamp != (fields["content_hash"], fields["retired"]):
            row = session.get_one(Card, card.id)
            newly_retired = fields["retired"] and not row.retired
            for key, value in copy.deepcopy(fields).items():
                setattr(row, key, value)
            row.updated_at = utcnow()
            if newly_retired:
                retired += 1
            else:
                updated += 1
        else:
            unchanged += 1
    for card_id, (_, was_retired) in stamps.items():
        if not was_retired:
            row = session.get_one(Card, card_id)
            row.retired = True
            row.updated_at = utcnow()
            retired += 1
    # The search index follows the cards; rebuilt whole also when it lost rows (a restored
    # database, a table emptied by hand) or was never filled (the migration adds it empty).
    changed = added or updated or retired
    if changed or indexed_count(session=session) != len(bank.cards):
        rebuild_index(session=session, rows=search_rows)
    session.commit()
    return SyncReport(added, updated, retired, unchanged)


def sync_from_disk(*, session: Session, root: Path) -> SyncReport:
    return sync_bank(session=session, bank=load_bank(root))

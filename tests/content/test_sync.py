"""Syncing the bank is idempotent: edits update, removals retire, nothing is deleted."""

from __future__ import annotations

import shutil
from pathlib import Path

from sqlmodel import Session, select

from app.db import make_engine
from app.models import Card
from app.services.content_sync import sync_from_disk


def test_sync_adds_updates_retires_and_revives(tmp_path: Path, bank_root: Path, db_url: str) -> None:
    shutil.copytree(bank_root, tmp_path / "bank")
    root = tmp_path / "bank"
    engine = make_engine(db_url)
    with Session(engine) as session:
        first = sync_from_disk(session=session, root=root)
        assert first.added >= 40 and first.updated == first.retired == 0
        again = sync_from_disk(session=session, root=root)
        assert (again.added, again.updated, again.retired) == (0, 0, 0)

        card = root / "cards" / "kv-cache-contents" / "what-the-cache-stores.md"
        original = card.read_text()
        card.write_text(
            original.replace("What exactly does the KV cache store?", "What does the KV cache hold?")
        )
        edited = sync_from_disk(session=session, root=root)
        assert (edited.added, edited.updated, edited.retired) == (0, 1, 0)
        assert session.get(Card, "what-the-cache-stores").title == "What does the KV cache hold?"

        card.unlink()
        removed = sync_from_disk(session=session, root=root)
        assert removed.retired == 1
        row = session.get(Card, "what-the-cache-stores")
        assert row is not None and row.retired

        card.write_text(original)
        revived = sync_from_disk(session=session, root=root)
        assert revived.updated == 1
        session.refresh(row)
        assert not row.retired
        total = len(session.exec(select(Card)).all())
        assert total == first.added
    engine.dispose()

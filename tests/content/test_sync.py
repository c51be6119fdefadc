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


def test_a_retired_card_keeps_its_review_history(tmp_path: Path, bank_root: Path, db_url: str) -> None:
    """Deleting a card's file (how a duplicate is merged away) retires it; reviews and progress stay."""
    from fsrs import Rating

    from app.models import CardProgress, Review
    from app.services.accounts import export_user
    from app.services.cards import CardFilter, list_cards
    from app.services.scheduling import review_card
    from tests.services.factories import fast_settings, make_user

    shutil.copytree(bank_root, tmp_path / "bank")
    root = tmp_path / "bank"
    engine = make_engine(db_url)
    with Session(engine) as session:
        sync_from_disk(session=session, root=root)
        user = make_user(session, email="history@example.com")
        for rating in (Rating.Good, Rating.Again):
            review_card(
                session=session,
                user=user,
                card_id="why-caching-is-exact",
                rating=rating,
                source="recall",
                settings=fast_settings(db_url),
            )
        session.commit()

        (root / "cards" / "cache-exactness" / "why-caching-is-exact.md").unlink()
        assert sync_from_disk(session=session, root=root).retired == 1

        row = session.get(Card, "why-caching-is-exact")
        assert row is not None and row.retired and row.title  # still there, hidden
        listed, _ = list_cards(session=session, filters=CardFilter(topic="cache-exactness"), page_size=50)
        assert "why-caching-is-exact" not in [c.id for c in listed]
        reviews = session.exec(select(Review).where(Review.card_id == "why-caching-is-exact")).all()
        assert [r.rating for r in reviews] == [int(Rating.Good), int(Rating.Again)]
        progress = session.exec(
            select(CardProgress).where(CardProgress.card_id == "why-caching-is-exact")
        ).one()
        assert progress.reps == 2
        exported = export_user(session=session, user=user)["tables"]
        assert len(exported["review"]) == 2
    engine.dispose()

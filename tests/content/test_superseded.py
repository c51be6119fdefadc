"""A card retired in favour of another keeps its file and names a live successor."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from sqlmodel import Session

from app.content.loader import ContentError, load_bank
from app.db import make_engine
from app.models import Card
from app.services.content_sync import sync_from_disk

TOPIC = "kv-cache-contents"
SOURCE = Path(__file__).resolve().parents[2] / "questions" / "cards" / TOPIC / "what-the-cache-stores.md"


def _card(card_id: str, superseded_by: str | None = None) -> str:
    text = SOURCE.read_text().replace("id: what-the-cache-stores", f"id: {card_id}", 1)
    if superseded_by is not None:
        text = text.replace("\ntopic: ", f"\nsuperseded_by: {superseded_by}\ntopic: ", 1)
    return text


@pytest.fixture
def bank(tmp_path: Path, bank_root: Path) -> Path:
    shutil.copy(bank_root / "topics.yaml", tmp_path / "topics.yaml")
    (tmp_path / "cards" / TOPIC).mkdir(parents=True)
    (tmp_path / "cards" / TOPIC / "live.md").write_text(_card("live-card"))
    return tmp_path


def test_a_superseded_card_loads_but_is_not_live(bank: Path) -> None:
    (bank / "cards" / TOPIC / "old.md").write_text(_card("old-card", "live-card"))
    loaded = load_bank(bank)
    assert {c.id for c in loaded.cards} == {"live-card", "old-card"}
    assert [c.id for c in loaded.live_cards] == ["live-card"]
    assert next(c for c in loaded.cards if c.id == "old-card").superseded_by == "live-card"


@pytest.mark.parametrize(
    ("successor", "message"),
    [
        ("old-card", "cannot supersede itself"),
        ("no-such-card", "no card has the id 'no-such-card'"),
        ("also-old", "'also-old' is retired too"),
        ("Not A Slug", "superseded_by"),
    ],
)
def test_a_bad_successor_is_named(bank: Path, successor: str, message: str) -> None:
    (bank / "cards" / TOPIC / "also-old.md").write_text(_card("also-old", "live-card"))
    (bank / "cards" / TOPIC / "old.md").write_text(_card("old-card", successor))
    with pytest.raises(ContentError) as caught:
        load_bank(bank)
    text = str(caught.value)
    assert "old.md" in text and message in text


def test_sync_retires_a_superseded_card_and_keeps_its_row(bank: Path, db_url: str) -> None:
    old = bank / "cards" / TOPIC / "old.md"
    old.write_text(_card("old-card"))
    engine = make_engine(db_url)
    with Session(engine) as session:
        first = sync_from_disk(session=session, root=bank)
        assert first.added == 2 and first.retired == 0
        old.write_text(_card("old-card", "live-card"))
        second = sync_from_disk(session=session, root=bank)
        assert (second.added, second.updated, second.retired) == (0, 0, 1)
        row = session.get(Card, "old-card")
        assert row is not None and row.retired and row.data["superseded_by"] == "live-card"
        assert session.get(Card, "live-card").retired is False  # type: ignore[union-attr]
        # Unretiring it (the line removed) brings it back.
        old.write_text(_card("old-card"))
        third = sync_from_disk(session=session, root=bank)
        assert third.updated == 1
        session.refresh(row)
        assert not row.retired
    engine.dispose()

"""`kvprep export anki`, run as a user runs it, on a SQLite file of its own."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from fsrs import Rating
from sqlmodel import Session, col, select

from app.cli import main
from app.config import get_settings
from app.db import make_engine
from app.models import Card
from app.services.scheduling import review_card
from tests.services.factories import fast_settings, make_user


@pytest.fixture
def database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    url = f"sqlite:///{tmp_path / 'kvprep.sqlite3'}"
    monkeypatch.setenv("DATABASE_URL", url)
    monkeypatch.setenv("KVPREP_NEW_CARDS_PER_DAY", "0")
    monkeypatch.chdir(tmp_path)
    get_settings.cache_clear()
    yield url
    get_settings.cache_clear()


def _notes(path: Path) -> list[str]:
    from tests.services.apkg import read_apkg

    return sorted(n.fields["Card"] for n in read_apkg(path.read_bytes()).notes)


def test_a_topic_to_a_file(database: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "rope.apkg"
    assert main(["export", "anki", "--topic", "rope", "-o", str(out)]) == 0
    engine = make_engine(database)
    with Session(engine) as session:
        rope = session.exec(select(Card.id).where(Card.topic == "rope", col(Card.retired).is_(False))).all()
    engine.dispose()
    assert _notes(out) == sorted(rope) and rope
    assert f"wrote {out}: {len(rope)} notes" in capsys.readouterr().out


def test_an_accounts_due_cards(database: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["export", "anki", "--topic", "rope", "-o", str(tmp_path / "first.apkg")]) == 0
    )  # syncs the bank
    engine = make_engine(database)
    settings = fast_settings(database, new_cards_per_day=0)
    two_hours_ago = datetime.now(UTC) - timedelta(hours=2)
    with Session(engine) as session:
        user = make_user(session, email="cli@example.com")
        due, later = sorted(session.exec(select(Card.id).where(Card.topic == "rope")).all())[:2]
        for card_id, rating in ((due, Rating.Again), (later, Rating.Easy)):
            review_card(
                session=session,
                user=user,
                card_id=card_id,
                rating=rating,
                source="recall",
                settings=settings,
                now=two_hours_ago,
            )
        session.commit()
    engine.dispose()
    capsys.readouterr()
    assert main(["export", "anki", "--due", "--user", "CLI@example.com"]) == 0
    written = capsys.readouterr().out
    name = f"kvprep-due-{datetime.now(UTC).date().isoformat()}.apkg"
    assert f"wrote {name}: 1 note " in written
    assert _notes(tmp_path / name) == [due]


def test_refusals(database: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["export", "anki", "--due"]) == 2
    assert "--due needs --user EMAIL" in capsys.readouterr().err
    assert main(["export", "anki", "--topic", "no-such-topic"]) == 2
    assert "unknown topic 'no-such-topic'" in capsys.readouterr().err
    assert main(["export", "anki", "--due", "--user", "nobody@example.com"]) == 1
    assert "no account has the email 'nobody@example.com'" in capsys.readouterr().err
    assert not list(Path.cwd().glob("*.apkg"))

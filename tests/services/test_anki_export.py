"""The Anki export: the package opened as Anki opens it (tests/services/apkg.py), note by note."""

from __future__ import annotations

import html
from datetime import UTC, datetime, timedelta

import pytest
from fsrs import Rating
from markdown_it import MarkdownIt
from sqlmodel import Session, col, select

from app.config import Settings
from app.models import Card, Topic
from app.services.anki_export import MODEL_ID, AnkiSelection, export_anki, note_guid, stable_id
from app.services.card_content import content
from app.services.errors import NotReady
from app.services.scheduling import review_card
from tests.services.apkg import read_apkg
from tests.services.factories import fast_settings, make_user

NOW = datetime(2026, 12, 2, 9, 0, tzinfo=UTC)


def _live(db: Session, topic: str) -> list[Card]:
    query = select(Card).where(Card.topic == topic, col(Card.retired).is_(False))
    return list(db.exec(query).all())


def _topic_with_an_arxiv_source(db: Session) -> str:
    for card in db.exec(select(Card).where(col(Card.retired).is_(False))).all():
        if any("arXiv:" in s for s in content(card).sources) and card.tags:
            return card.topic
    raise AssertionError("no live card cites an arXiv id")


def _text(fragment: str) -> str:
    """HTML as the words it shows (tags dropped, entities decoded), to compare with the card's text."""
    import re

    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", fragment)).split())


def _words(text: str) -> str:
    """What Markdown (or HTML) shows, as plain words: emphasis and code marks gone."""
    return _text(MarkdownIt("commonmark").render(text))


def test_a_topic_exports_one_note_per_card_with_the_whole_answer(db: Session, settings: Settings) -> None:
    topic = _topic_with_an_arxiv_source(db)
    data, notes = export_anki(
        session=db, selection=AnkiSelection(topic=topic), user=None, settings=settings, now=NOW
    )
    package = read_apkg(data)
    cards = {c.id: c for c in _live(db, topic)}
    assert notes == len(cards) == len(package.notes)
    by_card = package.by_card()
    assert set(by_card) == set(cards)
    title = db.get(Topic, topic)
    assert title is not None
    deck_id = stable_id("deck", topic)
    assert package.decks[deck_id]["name"] == f"kvprep::{title.title}"
    arxiv_links = 0
    for card_id, card in cards.items():
        note, c = by_card[card_id], content(card)
        assert note.guid == note_guid(card_id)
        assert note.model_id == MODEL_ID
        assert note.deck_ids == [deck_id]
        assert f"kvprep::topic::{topic}" in note.tags
        assert f"kvprep::difficulty::{card.difficulty}" in note.tags
        assert {f"kvprep::tag::{t}" for t in card.tags} <= set(note.tags)
        assert note.fields["Difficulty"] == card.difficulty
        # The fields are HTML already: read as shown, never as Markdown again (a `x**2` in code
        # would turn into emphasis).
        question = _text(note.fields["Question"])
        assert _words(c.question)[:60] in question
        answer = _text(note.fields["Answer"])
        assert note.fields["Answer"].count("<li>") == len(c.key_points)
        for point in c.key_points:
            assert _words(point)[:40] in answer
        follow_ups = _text(note.fields["FollowUps"])
        assert note.fields["FollowUps"].count("<dt>") == len(c.follow_ups)
        for f in c.follow_ups:
            assert _words(f.question)[:40] in follow_ups
            assert _words(f.answer)[:40] in follow_ups
        wrong = _text(note.fields["WrongAnswers"])
        assert note.fields["WrongAnswers"].count("<dt>") == len(c.wrong_answers)
        for w in c.wrong_answers:
            assert _words(w.why)[:40] in wrong
        assert note.fields["Sources"].count("<li>") == len(c.sources)
        for source in c.sources:
            if "arXiv:" in source:
                arxiv_id = source.split("arXiv:")[1].split(")")[0].split()[0].rstrip(".,;")
                assert f'<a href="https://arxiv.org/abs/{arxiv_id}"' in note.fields["Sources"]
                arxiv_links += 1
    assert arxiv_links > 0


def test_every_card_and_a_difficulty_filter(db: Session, settings: Settings) -> None:
    everything = read_apkg(
        export_anki(session=db, selection=AnkiSelection(), user=None, settings=settings, now=NOW)[0]
    )
    live = db.exec(select(Card).where(col(Card.retired).is_(False))).all()
    assert {n.fields["Card"] for n in everything.notes} == {c.id for c in live}
    # One subdeck per topic, each under its own stable id.
    assert {d for n in everything.notes for d in n.deck_ids} == {stable_id("deck", c.topic) for c in live}
    hard = read_apkg(
        export_anki(
            session=db, selection=AnkiSelection(difficulty="hard"), user=None, settings=settings, now=NOW
        )[0]
    )
    assert {n.fields["Card"] for n in hard.notes} == {c.id for c in live if c.difficulty == "hard"}
    assert 0 < len(hard.notes) < len(everything.notes)


def test_a_second_export_keeps_every_id_so_anki_updates_the_notes(db: Session, settings: Settings) -> None:
    topic = _topic_with_an_arxiv_source(db)
    selection = AnkiSelection(topic=topic)
    first = read_apkg(export_anki(session=db, selection=selection, user=None, settings=settings, now=NOW)[0])
    later = NOW + timedelta(days=3)
    second = read_apkg(
        export_anki(session=db, selection=selection, user=None, settings=settings, now=later)[0]
    )
    assert {n.guid for n in first.notes} == {n.guid for n in second.notes}
    assert len({n.guid for n in first.notes}) == len(first.notes)
    assert set(first.models) == set(second.models) == {MODEL_ID}
    first_decks = {d for n in first.notes for d in n.deck_ids}
    assert first_decks == {d for n in second.notes for d in n.deck_ids} == {stable_id("deck", topic)}
    # Newer notes: Anki's import replaces a note it holds by the same guid when the file's is newer.
    assert min(n.modified for n in second.notes) > max(n.modified for n in first.notes)


def test_a_due_export_holds_the_users_due_cards_and_not_the_others(db: Session, db_url: str) -> None:
    settings = fast_settings(db_url, new_cards_per_day=0)
    user = make_user(db, email="due@example.com")
    cards = sorted(_live(db, _topic_with_an_arxiv_source(db)), key=lambda c: c.id)[:2]
    due, later = cards
    # Again: due again within minutes; Easy: due in days.
    review_card(
        session=db,
        user=user,
        card_id=due.id,
        rating=Rating.Again,
        source="recall",
        settings=settings,
        now=NOW,
    )
    review_card(
        session=db,
        user=user,
        card_id=later.id,
        rating=Rating.Easy,
        source="recall",
        settings=settings,
        now=NOW,
    )
    db.commit()
    an_hour_on = NOW + timedelta(hours=1)
    data, notes = export_anki(
        session=db, selection=AnkiSelection(due=True), user=user, settings=settings, now=an_hour_on
    )
    assert notes == 1
    assert [n.fields["Card"] for n in read_apkg(data).notes] == [due.id]
    other = make_user(db, email="other@example.com")
    with pytest.raises(NotReady, match="nothing to export"):
        export_anki(
            session=db, selection=AnkiSelection(due=True), user=other, settings=settings, now=an_hour_on
        )


def test_new_cards_of_the_day_join_a_due_export(db: Session, db_url: str) -> None:
    settings = fast_settings(db_url, new_cards_per_day=3)
    user = make_user(db, email="new@example.com")
    data, notes = export_anki(
        session=db, selection=AnkiSelection(due=True), user=user, settings=settings, now=NOW
    )
    assert notes == 3 == len(read_apkg(data).notes)


def test_file_names_say_what_they_hold() -> None:
    assert AnkiSelection().file_name("2026-12-02") == "kvprep-2026-12-02.apkg"
    assert AnkiSelection(topic="rope", difficulty="hard").file_name("d") == "kvprep-rope-hard-d.apkg"
    assert AnkiSelection(due=True).file_name("d") == "kvprep-due-d.apkg"

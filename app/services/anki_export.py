"""Cards as an Anki package (.apkg, written by genanki): for people who already study in Anki.

One note per card, of one note type of our own: the question on the front; on the back the strong
answer (the key points), the follow-ups with their answers, the common wrong answers with why they
are wrong, and the sources with their arXiv ids and addresses as links. Each topic is a subdeck
of "kvprep". Tags name the topic, the difficulty and the card's own tags, under `kvprep::`.

Every id is derived from a name, never drawn at random, so importing a later export of the same
cards updates the notes already in the collection instead of adding copies: a note's guid comes
from the card's slug (Anki matches imported notes by guid), the note type's id is fixed, and a
topic's deck id comes from the topic's slug.

An .apkg is a zip holding `collection.anki2`, an SQLite database (tests/services/test_anki_export.py
opens one).
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import genanki
from markdown_it import MarkdownIt
from sqlmodel import Session, col, select

from app.config import Settings
from app.models import Card, Topic, User
from app.services.card_content import content
from app.services.cards import CardFilter, list_cards
from app.services.errors import NotReady
from app.services.scheduling import due_queue
from app.source_links import source_html

# Raw HTML in Markdown is off, as on the pages: the fields hold only what Markdown makes.
_md = MarkdownIt("commonmark", {"html": False}).enable("table")

DECK_ROOT = "kvprep"
MEDIA_TYPE = "application/apkg"

# Anki wants ids below 2**63; genanki's examples draw them from [2**30, 2**31). Ours are fixed
# (the note type) or derived from a slug (the decks), in that range, so they never change.
MODEL_ID = 1_484_203_611


def stable_id(kind: str, name: str) -> int:
    """A deck id for `name` that every export repeats: 31 bits of its SHA-256, at or above 2**30."""
    digest = hashlib.sha256(f"kvprep:{kind}:{name}".encode()).digest()
    return (1 << 30) | (int.from_bytes(digest[:4], "big") & ((1 << 30) - 1))


def note_guid(card_id: str) -> str:
    """The note's guid, from the card's slug alone: a re-export updates the note instead of adding one."""
    return str(genanki.guid_for("kvprep-card", card_id))


FIELDS = ["Card", "Title", "Question", "Answer", "FollowUps", "WrongAnswers", "Sources", "Difficulty"]

FRONT = """<div class="kv-title">{{Title}} <span class="kv-level">{{Difficulty}}</span></div>
<div class="kv-question">{{Question}}</div>"""

BACK = """{{FrontSide}}
<hr id="answer">
<h3>A strong answer</h3>
<div class="kv-answer">{{Answer}}</div>
{{#FollowUps}}<h3>Follow-ups</h3><div class="kv-follow-ups">{{FollowUps}}</div>{{/FollowUps}}
{{#WrongAnswers}}<h3>Common wrong answers</h3><div class="kv-wrong">{{WrongAnswers}}</div>{{/WrongAnswers}}
{{#Sources}}<h3>Sources</h3><div class="kv-sources">{{Sources}}</div>{{/Sources}}"""

CSS = """.card { font-family: system-ui, sans-serif; font-size: 17px; text-align: left; line-height: 1.45;
  max-width: 46em; margin: 0 auto; }
.kv-title { font-weight: 600; margin-bottom: .6em; }
.kv-level { font-weight: 400; font-size: 80%; opacity: .7; }
h3 { font-size: 100%; margin: 1.2em 0 .3em; }
pre, code { font-size: 90%; }
pre { overflow-x: auto; padding: .5em; background: rgba(127, 127, 127, .12); }
.kv-follow-ups dt, .kv-wrong dt { font-weight: 600; margin-top: .6em; }
.kv-follow-ups dd, .kv-wrong dd { margin-left: 1em; }"""

MODEL = genanki.Model(
    MODEL_ID,
    "kvprep card",
    fields=[{"name": name} for name in FIELDS],
    templates=[{"name": "Question, then the answer", "qfmt": FRONT, "afmt": BACK}],
    css=CSS,
    sort_field_index=FIELDS.index("Title"),
)


def _markdown(text: str) -> str:
    return _md.render(text or "").strip()


def _inline(text: str) -> str:
    return _md.renderInline(text or "").strip()


def _pairs(pairs: Sequence[tuple[str, str]]) -> str:
    """Question-and-answer pairs as a definition list (Markdown in both halves)."""
    items = "".join(f"<dt>{_inline(term)}</dt><dd>{_markdown(text)}</dd>" for term, text in pairs)
    return f"<dl>{items}</dl>" if items else ""


def _tag(text: str) -> str:
    """An Anki tag (no spaces allowed in one)."""
    return "_".join(text.split())


def note_for(card: Card) -> genanki.Note:
    c = content(card)
    fields = [
        card.id,
        _inline(card.title),
        _markdown(c.question),
        "<ul>" + "".join(f"<li>{_inline(point)}</li>" for point in c.key_points) + "</ul>",
        _pairs([(f.question, f.answer) for f in c.follow_ups]),
        _pairs([(w.answer, w.why) for w in c.wrong_answers]),
        "<ul>" + "".join(f"<li>{source_html(s)}</li>" for s in c.sources) + "</ul>" if c.sources else "",
        card.difficulty,
    ]
    tags = [
        DECK_ROOT,
        f"{DECK_ROOT}::topic::{card.topic}",
        f"{DECK_ROOT}::difficulty::{card.difficulty}",
        *(f"{DECK_ROOT}::tag::{_tag(t)}" for t in card.tags),
    ]
    return genanki.Note(model=MODEL, fields=fields, tags=tags, guid=note_guid(card.id))


def deck_name(topic_title: str) -> str:
    # "::" nests decks in Anki: a title holding it would make a deck of its own.
    return f"{DECK_ROOT}::{topic_title.replace('::', ':')}"


def anki_package(cards: Sequence[Card], topics: Sequence[Topic], *, timestamp: float) -> bytes:
    """The .apkg of these cards, one subdeck per topic; `timestamp` is the notes' modification time
    (Anki updates a note already in the collection from an import that is newer)."""
    titles = {t.slug: t for t in topics}
    decks: dict[str, genanki.Deck] = {}
    for card in cards:
        deck = decks.get(card.topic)
        if deck is None:
            topic = titles.get(card.topic)
            deck = decks[card.topic] = genanki.Deck(
                stable_id("deck", card.topic),
                deck_name(topic.title if topic else card.topic),
                description=_markdown(topic.summary) if topic else "",
            )
        deck.add_note(note_for(card))
    out = io.BytesIO()
    genanki.Package(list(decks.values())).write_to_file(out, timestamp=timestamp)
    return out.getvalue()


@dataclass(frozen=True)
class AnkiSelection:
    """Which cards an export holds: the live cards of a topic and a difficulty (None: all), or the
    user's due queue (due now, then today's new cards, as "Review what is due" asks them)."""

    topic: str | None = None
    difficulty: str | None = None
    due: bool = False

    def file_name(self, today: str) -> str:
        parts = ["kvprep", "due" if self.due else "", self.topic or "", self.difficulty or "", today]
        return "-".join(p for p in parts if p) + ".apkg"


def selected_cards(
    *, session: Session, selection: AnkiSelection, user: User | None, settings: Settings, now: datetime
) -> list[Card]:
    """The cards of `selection`, in study order (the due queue in its own order)."""
    if selection.due:
        assert user is not None and user.id is not None, "a due export is some user's"
        topics = [selection.topic] if selection.topic else None
        return due_queue(
            session=session,
            user=user,
            settings=settings,
            now=now,
            topics=topics,
            difficulty=selection.difficulty,
        )
    rows, _ = list_cards(
        session=session,
        filters=CardFilter(topic=selection.topic, difficulty=selection.difficulty),
        page=1,
        page_size=1_000_000,
    )
    return rows


def export_anki(
    *, session: Session, selection: AnkiSelection, user: User | None, settings: Settings, now: datetime
) -> tuple[bytes, int]:
    """The package of `selection` and how many notes it holds."""
    cards = selected_cards(session=session, selection=selection, user=user, settings=settings, now=now)
    if not cards:
        raise NotReady(
            "No card is due now, and today's new cards are done: nothing to export."
            if selection.due
            else "No card matches these filters: nothing to export."
        )
    topics = session.exec(select(Topic).where(col(Topic.slug).in_({c.topic for c in cards}))).all()
    return anki_package(cards, topics, timestamp=now.timestamp()), len(cards)

"""`kvprep export anki [--topic T] [--difficulty D] [--due --user EMAIL] [-o FILE]`: an Anki package.

It brings this machine's database up to date (migrations, then the bank, as `kvprep sync-content`
does) and writes the same .apkg as the buttons on /cards and /progress
(app/services/anki_export.py). `--due` exports one account's due cards, so it needs `--user`.

Exit status: 0 when the file is written, 1 when there is nothing to export or no such account,
2 for a usage error.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from app.config import get_settings


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kvprep export", description="Export cards for other study tools.")
    sub = parser.add_subparsers(dest="format", required=True)
    anki = sub.add_parser("anki", help="write an Anki package (.apkg)")
    anki.add_argument("--topic", help="one topic's cards (a slug, as in /cards?topic=...)")
    anki.add_argument("--difficulty", choices=["easy", "medium", "hard"])
    anki.add_argument("--due", action="store_true", help="only the account's due cards (needs --user)")
    anki.add_argument("--user", metavar="EMAIL", help="whose due cards (the account's email)")
    anki.add_argument("-o", "--output", metavar="FILE", help="where to write it (default: a dated name here)")
    return parser


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    if args.due and not args.user:
        print("kvprep export anki: --due needs --user EMAIL (whose due cards?)", file=sys.stderr)
        return 2
    from sqlmodel import Session

    from app.content.loader import ContentError
    from app.db import engine_for, migrate
    from app.services.accounts import find_account
    from app.services.anki_export import AnkiSelection, export_anki
    from app.services.cards import has_topic
    from app.services.clock import SYSTEM_CLOCK
    from app.services.content_sync import sync_from_disk
    from app.services.errors import ServiceError

    settings = get_settings()
    migrate()
    engine = engine_for(settings)
    try:
        with Session(engine) as session:
            try:
                sync_from_disk(session=session, root=settings.content_root)
            except ContentError as exc:
                print(f"kvprep export anki: {exc}", file=sys.stderr)
                return 1
            if args.topic and not has_topic(session=session, slug=args.topic):
                print(f"kvprep export anki: unknown topic {args.topic!r}", file=sys.stderr)
                return 2
            user = None
            if args.user:
                user = find_account(session=session, email=args.user)
                if user is None:
                    print(f"kvprep export anki: no account has the email {args.user!r}", file=sys.stderr)
                    return 1
            selection = AnkiSelection(topic=args.topic, difficulty=args.difficulty, due=args.due)
            now = SYSTEM_CLOCK.now()
            try:
                package, notes = export_anki(
                    session=session, selection=selection, user=user, settings=settings, now=now
                )
            except ServiceError as exc:
                print(f"kvprep export anki: {exc.message}", file=sys.stderr)
                return 1
    finally:
        engine.dispose()
    output = Path(args.output) if args.output else Path(selection.file_name(now.date().isoformat()))
    try:
        output.write_bytes(package)
    except OSError as exc:
        print(f"kvprep export anki: cannot write {output}: {exc}", file=sys.stderr)
        return 1
    print(f"wrote {output}: {notes} note{'s' if notes != 1 else ''} (import it in Anki: File > Import)")
    return 0

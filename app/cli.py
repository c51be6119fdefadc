"""The `kvprep` command: serve, migrate, sync-content, check-content, figures, grade."""

from __future__ import annotations

import argparse
import copy
import os
import sys
from pathlib import Path

from app.config import get_settings


def _check_content(args: argparse.Namespace) -> int:
    from app.content.catalog import load_catalog
    from app.content.loader import ContentError

    root = Path(args.root) if args.root else get_settings().content_root
    try:
        catalog = load_catalog(root)
    except ContentError as exc:
        print(exc, file=sys.stderr)
        return 1
    bank = catalog.bank
    from app.content.figure_audit import audit_bank
    from app.content.figures import compute_figures

    figure_problems = audit_bank(bank.cards, compute_figures())
    if figure_problems:
        print(f"{len(figure_problems)} figure problem(s) in {root}:", file=sys.stderr)
        for problem in figure_problems:
            print(f"  {problem}", file=sys.stderr)
        return 1
    print(
        f"ok: {len(bank.cards)} cards ({len(bank.live_cards)} live) in {len(bank.topics)} topics, "
        f"{len(catalog.challenges)} challenges ({root})"
    )
    return 0


def _migrate(_: argparse.Namespace) -> int:
    from app.db import migrate

    migrate()
    print("database schema is up to date")
    return 0


def _sync_content(_: argparse.Namespace) -> int:
    from sqlmodel import Session

    from app.content.loader import ContentError
    from app.db import engine_for, migrate
    from app.services.content_sync import sync_from_disk

    migrate()
    settings = get_settings()
    engine = engine_for(settings)
    try:
        with Session(engine) as session:
            report = sync_from_disk(session=session, root=settings.content_root)
    except ContentError as exc:
        print(exc, file=sys.stderr)
        return 1
    finally:
        engine.dispose()
    print(f"question bank synced: {report}")
    return 0


def _purge_guests(_: argparse.Namespace) -> int:
    from sqlmodel import Session

    from app.db import engine_for, migrate
    from app.services.guests import purge_idle_guests

    migrate()
    settings = get_settings()
    engine = engine_for(settings)
    with Session(engine) as session:
        removed = purge_idle_guests(session=session, idle_days=settings.guest_idle_days)
    engine.dispose()
    print(f"removed {removed} guests idle for over {settings.guest_idle_days} days that kept nothing")
    return 0


def _figures(_: argparse.Namespace) -> int:
    from app.content.figures import compute_figures
    from app.content.hardware import GPUS

    print("GPUs (data-sheet peaks, dense BF16, decimal units):")
    for key, gpu in GPUS.items():
        print(
            f"  {key:10s} {gpu.bf16_flops / 1e12:,.0f} TFLOPS  {gpu.hbm_bytes_per_s / 1e9:,.0f} GB/s  "
            f"{gpu.hbm_bytes / 1e9:.0f} GB  ridge {gpu.ridge_flops_per_byte:.1f} FLOP/byte"
        )
        print(f"  {'':10s} source: {gpu.source}")
    print()
    figures = compute_figures()
    width = max(map(len, figures))
    for name, value in figures.items():
        print(f"{name:{width}s} {value}")
    return 0


def _serve(args: argparse.Namespace) -> int:
    import uvicorn
    from sqlmodel import Session

    from app.content.catalog import load_catalog
    from app.content.loader import ContentError
    from app.db import engine_for, migrate
    from app.services.content_sync import sync_bank

    settings = get_settings()
    try:
        catalog = load_catalog(settings.content_root)
    except ContentError as exc:
        print(f"refusing to start: {exc}", file=sys.stderr)
        return 1
    if not settings.redis_url and settings.embedded_queue == "sqlite" and settings.grading_workers > 0:
        from app.services.embedded_queue import QueueOfAnotherDatabase, check_queue_owner

        try:  # said here, in one line, before uvicorn starts (its lifespan refuses too)
            lock = check_queue_owner(settings.queue_file, settings.database_url)
        except QueueOfAnotherDatabase as exc:
            print(f"refusing to start: {exc}", file=sys.stderr)
            return 1
        if lock is not None:
            lock.release()
    migrate()
    if settings.sync_content_on_start:
        # Synced once here, before the server processes start: N processes syncing at once collide.
        engine = engine_for(settings)
        with Session(engine) as session:
            print(f"question bank synced: {sync_bank(session=session, bank=catalog.bank)}")
        engine.dispose()
        os.environ["KVPREP_SYNC_CONTENT_ON_START"] = "false"
    # Our own loggers (kvprep.*, graders.*) print beside uvicorn's: start-up reports the sandbox layers.
    # A logging config (not basicConfig) so that every server process of --workers N applies it.
    log_config = copy.deepcopy(uvicorn.config.LOGGING_CONFIG)
    log_config["formatters"]["ours"] = {"format": "%(levelname)s:     %(name)s: %(message)s"}
    log_config["handlers"]["ours"] = {
        "class": "logging.StreamHandler",
        "formatter": "ours",
        "stream": "ext://sys.stderr",
    }
    for name, level in (("kvprep", "INFO"), ("graders", "INFO"), ("huey", "WARNING")):
        # huey at WARNING: one line per task drowns everything else.
        log_config["loggers"][name] = {"handlers": ["ours"], "level": level, "propagate": False}
    # Every process reads its settings from the environment: tell them how many they are.
    os.environ["KVPREP_SERVER_PROCESSES"] = str(args.workers)
    # X-Forwarded-For names the client only when a proxy we know sent it: uvicorn would
    # otherwise believe it from 127.0.0.1, and anyone there could pick their own address.
    proxies = get_settings().forwarded_allow_ips.strip()
    uvicorn.run(
        "app.main:create_app",
        factory=True,
        host=args.host,
        port=args.port,
        workers=args.workers,
        loop="uvloop",
        http="httptools",
        log_level="info",
        log_config=log_config,
        # One log line per request cost a twelfth of a page under load: off unless asked for.
        access_log=args.access_log,
        proxy_headers=bool(proxies),
        forwarded_allow_ips=proxies or None,
    )
    return 0


def _worker(args: argparse.Namespace) -> int:
    from app.db import engine_for
    from app.services.grading import build_queue

    settings = get_settings()
    if not settings.redis_url:
        print(
            "kvprep worker needs REDIS_URL: the embedded queue is served by the app itself", file=sys.stderr
        )
        return 2
    from app.content.catalog import load_catalog
    from app.lab.jobs import LabJobs
    from app.services.personal_fsrs import FitJobs

    challenges = load_catalog(settings.content_root).challenges
    topics = {c.slug: c.meta.topics for c in challenges}
    engine = engine_for(settings)
    queue = build_queue(settings, engine, topics, {c.slug: c.meta.mistake_hints for c in challenges})
    # Lab runs share the queue: each worker dispatches them, one child at a time per machine.
    queue.companions.append(LabJobs(queue.huey, engine, settings))
    FitJobs(queue.huey, settings)  # so do personal FSRS fits
    queue.run_worker(args.threads)
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    # Torch runs single-threaded in every kvprep process: grading shares 2 cores with the server.
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    if argv[:2] == ["bench", "grader"]:
        from app.bench.grader import main as bench_main

        return bench_main(argv[2:])
    if argv[:2] == ["bench", "pages"]:
        from app.bench.pages import main as pages_main

        return pages_main(argv[2:])
    if argv[:2] == ["bench", "matcher"]:
        from app.bench.matcher import main as matcher_main

        return matcher_main(argv[2:])
    if argv[:2] == ["bench", "sandbox"]:
        from graders.bench import main as sandbox_bench_main

        return sandbox_bench_main(argv[2:])
    if argv[:2] == ["bench", "lab"]:
        from app.lab.bench import main as lab_bench_main

        return lab_bench_main(argv[2:])
    if argv[:1] == ["lab"]:
        from app.lab.cli import main as lab_main

        return lab_main(argv[1:])
    if argv[:1] == ["sweep"]:
        from graders.sweep import main as sweep_main

        return sweep_main(argv[1:])
    if argv[:1] in (["challenges"], ["submit"]):
        from app.client_cli import main as client_main

        return client_main(argv)
    if argv[:1] == ["export"]:
        from app.export_cli import main as export_main

        return export_main(argv[1:])
    if argv[:1] == ["grade"]:
        from graders.cli import main as grade_main

        return grade_main(argv)
    parser = argparse.ArgumentParser(prog="kvprep", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("serve", help="migrate, sync the bank and serve the app")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--workers", type=int, default=1, help="server processes (up to the cores)")
    p.add_argument("--access-log", action="store_true", help="log every request (off by default)")
    p.set_defaults(func=_serve)
    sub.add_parser("migrate", help="bring the database schema up to date").set_defaults(func=_migrate)
    sub.add_parser("sync-content", help="load questions/ into the database").set_defaults(func=_sync_content)
    p = sub.add_parser("check-content", help="validate the question bank; non-zero on any problem")
    p.add_argument("--root", help="bank folder (default: questions/)")
    p.set_defaults(func=_check_content)
    sub.add_parser("figures", help="print every computed figure cards may quote").set_defaults(func=_figures)
    sub.add_parser(
        "purge-guests", help="delete idle guests that kept nothing (KVPREP_GUEST_IDLE_DAYS)"
    ).set_defaults(func=_purge_guests)
    sub.add_parser("grade", help="grade a file: kvprep grade SLUG FILE [--json]")
    sub.add_parser(
        "sweep", help="every golden mistake on 200 seeds: kvprep sweep [--seeds N] [--challenge SLUG]"
    )
    sub.add_parser(
        "bench",
        help="kvprep bench grader | pages | sandbox | lab | matcher: latency of a server, the sandbox's "
        "cost and round trips per battery, speed of the lab, key-point matching",
    )
    sub.add_parser(
        "challenges", help="kvprep challenges pull SLUG [--dir D]: the prompt and starter as files"
    )
    sub.add_parser(
        "submit",
        help="kvprep submit SLUG FILE --server URL [--token T]: grade on a server, print the verdict",
    )
    sub.add_parser(
        "export", help="cards for Anki: kvprep export anki [--topic T] [--due --user EMAIL] [-o FILE]"
    )
    sub.add_parser(
        "lab", help="run the lab's GPT-2 experiments here: kvprep lab [--size tiny] [--charts DIR]"
    )
    p = sub.add_parser("worker", help="grade queued submissions (REDIS_URL: share the queue)")
    p.add_argument("--threads", type=int, default=2)
    p.set_defaults(func=_worker)
    args = parser.parse_args(argv)
    if args.command in DATABASE_COMMANDS:
        from app.db import DatabaseFileError, check_sqlite_files

        try:
            check_sqlite_files(get_settings())
        except DatabaseFileError as exc:
            print(f"kvprep {args.command}: {exc}", file=sys.stderr)
            return 1
    try:
        return int(args.func(args))
    except Exception as exc:
        # A file damaged after the check above, or one SQLite finds bad on a page the check skipped.
        message = _database_file_problem(exc)
        if message is None:
            raise
        print(f"kvprep {args.command}: {message}", file=sys.stderr)
        return 1


# The commands that open the database (and, serving, the queue and rate-limit files).
DATABASE_COMMANDS = {"serve", "migrate", "sync-content", "purge-guests", "worker"}


def _database_file_problem(exc: BaseException) -> str | None:
    """The message for a SQLite file SQLite itself refused, naming the file; None for anything else."""
    import sqlite3

    from sqlalchemy.exc import DatabaseError

    cause = exc.orig if isinstance(exc, DatabaseError) else exc
    if not isinstance(cause, sqlite3.DatabaseError) or isinstance(cause, sqlite3.OperationalError):
        return None
    url = get_settings().database_url
    where = url.removeprefix("sqlite:///") if url.startswith("sqlite:///") else url
    return (
        f"{where}: not a usable SQLite database ({cause}). "
        "Restore it from a backup, or move it away to start with an empty one."
    )


if __name__ == "__main__":
    raise SystemExit(main())

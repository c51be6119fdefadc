"""Fixtures shared by the whole suite.

Torch runs single-threaded everywhere in the tests: two multi-threaded torch
processes on a 2-core machine slow each other down by an order of magnitude.

scripts/test runs the suite in parallel (pytest-xdist), one process per core. Every
process keeps the files a Settings() would put in the checkout's var/ (the embedded
grading queue, the rate-limit counts, the lab's lock) in a folder of its own, and uses
a queue name of its own: two processes on one queue file would grade each other's
submissions, and on one lab lock would wait for each other's runs.

Three markers name what a fast loop leaves out (`scripts/test --fast` deselects them):
`browser` (Chromium through Playwright), `sandbox` (a submission graded in the real fork
server, marked here by path or fixture, see SANDBOX_FILES) and `postgres` (the PostgreSQL
half of every `db_url` test). PostgreSQL is only reached by a test that asks for it, so a run
without those tests needs no server.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import tempfile

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")
# Password hashing at its real cost (argon2id, 3 passes over 64 MiB) takes 0.2 s of a core per
# hash, and a sign-up, a log-in or a password change each hash: 0.4 s of most account tests, and
# more of the suite's CPU than any battery. The suite (and every server it starts, which inherits
# this environment) hashes at 1 pass over 1 MiB; tests/services/test_accounts.py checks that an
# app left to its defaults hashes at the real cost.
os.environ.setdefault("KVPREP_ARGON2_TIME_COST", "1")
os.environ.setdefault("KVPREP_ARGON2_MEMORY_KIB", "1024")

_PROCESS_DIR = tempfile.mkdtemp(prefix=f"kvprep-test-{os.getpid()}-")
atexit.register(shutil.rmtree, _PROCESS_DIR, ignore_errors=True)
os.environ["KVPREP_QUEUE_FILE"] = os.path.join(_PROCESS_DIR, "grading-queue.sqlite3")
os.environ["KVPREP_RATELIMIT_FILE"] = os.path.join(_PROCESS_DIR, "rate-limits.sqlite3")
os.environ["KVPREP_LAB_LOCK_FILE"] = os.path.join(_PROCESS_DIR, "lab.lock")
os.environ["KVPREP_QUEUE_NAME"] = f"kvprep-test-{os.getpid()}"

import torch  # noqa: E402

torch.set_num_threads(1)

from collections.abc import Iterator  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import pytest  # noqa: E402
from fastapi.testclient import TestClient  # noqa: E402
from sqlalchemy import Engine, text  # noqa: E402
from sqlmodel import SQLModel  # noqa: E402

from app.config import ROOT, Settings  # noqa: E402
from app.db import make_engine, migrate  # noqa: E402

# PostgreSQL runs on every dev machine and in CI (127.0.0.1:5432, trust auth, database `test`).
POSTGRES_URL = os.environ.get("KVPREP_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
BACKENDS = ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]

# Test files whose tests grade submissions in the real sandbox (the fork server and its
# children), relative to tests/; a test elsewhere that does is marked `sandbox` itself, or
# asks for a `grading_client` fixture (an app with a grading thread).
SANDBOX_FILES = (
    "graders/sandbox/",
    "graders/examples/test_run_sandbox.py",
    "graders/test_cli.py",
    "graders/test_runner.py",
    "graders/test_wording.py",
    "lab/test_lab_jobs.py",  # its apps start queue workers, which start the fork server
    "routes/test_run_flood.py",
    "routes/test_challenge_run.py",
    "services/test_grading.py",
    "test_scale_out.py",
    "test_cli_submit.py",
    "browser/test_quiz.py",
    "browser/test_mock.py",
)
SANDBOX_FIXTURES = {"grading_client"}

# The files that take longest (seconds of one process, from `pytest --junitxml` of the whole suite
# on 3 processes: the sweep 170, the sandbox's golden cases 98, the lab's jobs 56, ...), handed out
# first. pytest-xdist's own order (--dist loadfile) puts the files with the most tests first, which
# left the one-test files of 20-30 s (a phone walk, two servers, a scale-out) for the end, on one
# process while the others sat idle. scripts/test passes --no-loadscope-reorder to keep this order.
SLOWEST_FILES = (
    "graders/test_sweep.py",
    "graders/sandbox/test_golden_sandbox.py",
    "lab/test_lab_jobs.py",
    "routes/test_challenge_run.py",
    "browser/test_numeric_answers.py",
    "browser/test_choice_options.py",
    "browser/test_quiz_learning.py",
    "test_two_servers.py",
    "browser/test_calculator_cases.py",
    "routes/test_mock.py",
    "browser/test_phone.py",
    "browser/test_docs_offline.py",
    "browser/test_cards_ux.py",
    "graders/sandbox/test_spares.py",
    "services/test_personal_fsrs.py",
    "browser/test_key_point_suggestions.py",
    "routes/test_hostile_inputs.py",
    "routes/test_run_flood.py",
    "routes/test_submissions.py",
    "routes/test_security.py",
    "browser/test_lab_names.py",
    "graders/checks/test_paged_kv_model.py",
    "test_scale_out.py",
    "test_cli_submit.py",
    "browser/test_quiz.py",
    "browser/test_mock.py",
)


def pytest_configure(config: pytest.Config) -> None:
    """A run that leaves the sandbox out refuses to start the fork server, so that a test which
    grades in it without the `sandbox` marker fails with a sentence saying so."""
    if "not sandbox" in (config.option.markexpr or ""):
        from graders.sandbox.client import ForkServerClient

        def refuse(self: ForkServerClient) -> None:
            raise RuntimeError("this test starts the sandbox's fork server: mark it `sandbox`")

        ForkServerClient._start_locked = refuse  # type: ignore[method-assign]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    tests_root = Path(__file__).parent
    for item in items:
        where = item.path.relative_to(tests_root).as_posix()
        if where.startswith(SANDBOX_FILES) or SANDBOX_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.sandbox)
    # Stable: each file's tests keep their order, and the other files theirs, after the slowest.
    rank = {name: i for i, name in enumerate(SLOWEST_FILES)}
    items.sort(key=lambda item: rank.get(item.path.relative_to(tests_root).as_posix(), len(rank)))


@pytest.fixture(scope="session")
def _migrated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """Each backend migrated once per run, from an empty schema, through Alembic, when a test
    first asks for it (a run without PostgreSQL tests never connects to a server).

    PostgreSQL gets a schema of its own per run (search_path), so two test runs on one
    machine never drop each other's tables.
    """
    schema = f"kvprep_test_{os.getpid()}"
    admin = make_engine(POSTGRES_URL)

    class _Lazy(dict[str, str]):
        def __missing__(self, backend: str) -> str:
            if backend == "sqlite":
                url = f"sqlite:///{tmp_path_factory.mktemp('db') / 'test.sqlite3'}"
            else:
                with admin.begin() as conn:
                    conn.execute(text(f"DROP SCHEMA IF EXISTS {schema} CASCADE"))
                    conn.execute(text(f"CREATE SCHEMA {schema}"))
                separator = "&" if "?" in POSTGRES_URL else "?"
                url = f"{POSTGRES_URL}{separator}options=-csearch_path%3D{schema}"
            migrate(url)
            self[backend] = url
            return url

    lazy = _Lazy()
    yield lazy
    for engine in _HOUSEKEEPING.values():
        engine.dispose()
    _HOUSEKEEPING.clear()
    if "postgresql" in lazy:
        with admin.begin() as conn:
            conn.execute(text(f"DROP SCHEMA IF EXISTS {schema} CASCADE"))
    admin.dispose()


# The bank's two tables. A test app syncs questions/ into them as it starts (0.2 s into an empty
# database, with the search index rebuilt, 0.04 s into one that already holds it), so they are
# kept from one test to the next when, and only when, a test leaves them exactly as that sync makes
# them (see _content_stamp), and only for a test whose app syncs that same bank: one of
# BANK_FIXTURES, each an app on the real bank (the route tests' app_client and grading_client
# start one per test). Every other test starts on empty tables as before.
CONTENT_TABLES = ("card", "topic")
BANK_FIXTURES = {"client", "app_client", "grading_client"}
_BANK_STAMP: dict[str, object] = {}  # database url -> the tables as the real bank's sync left them
_HOLDS_BANK: set[str] = set()  # the urls whose content tables hold the bank now


CARD_STAMP = "SELECT id, title, topic, difficulty, content_hash, path, retired FROM card ORDER BY id"
TOPIC_STAMP = "SELECT slug, title, summary, position FROM topic ORDER BY slug"


# The fixtures' own engine per database, kept for the process: a new engine for each look at the
# tables (two per test) was a new PostgreSQL session each time, a backend process whose catalog
# caches fill again for 30-odd tables (38 PostgreSQL route tests: 128 sessions before, 50 after;
# the server's CPU 3.8 s before, 3.2 s after).
_HOUSEKEEPING: dict[str, Engine] = {}


def _housekeeping(url: str) -> Engine:
    if url not in _HOUSEKEEPING:
        _HOUSEKEEPING[url] = make_engine(url)
    return _HOUSEKEEPING[url]


def _content_stamp(url: str) -> object:
    with _housekeeping(url).connect() as conn:
        cards = conn.execute(text(CARD_STAMP)).all()
        topics = conn.execute(text(TOPIC_STAMP)).all()
    return (tuple(map(tuple, cards)), tuple(map(tuple, topics)))


def _empty(url: str, *, content: bool) -> None:
    with _housekeeping(url).begin() as conn:
        for table in reversed(SQLModel.metadata.sorted_tables):
            if content or table.name not in CONTENT_TABLES:
                conn.execute(table.delete())
    if content:
        _HOLDS_BANK.discard(url)


def _syncs_the_bank(settings: Settings) -> bool:
    return settings.sync_content_on_start and Path(settings.content_root) == ROOT / "questions"


@pytest.fixture(params=BACKENDS)
def db_url(request: pytest.FixtureRequest, _migrated: dict[str, str]) -> Iterator[str]:
    """A migrated, empty database of each backend; every table is emptied after the test (a test
    with one of BANK_FIXTURES may find the bank's tables already synced, as its app would leave them)."""
    url = _migrated[request.param]
    if url in _HOLDS_BANK and not BANK_FIXTURES & set(request.fixturenames):
        _empty(url, content=True)
    yield url
    keep = url in _BANK_STAMP and _content_stamp(url) == _BANK_STAMP[url]
    _empty(url, content=not keep)
    if keep:
        _HOLDS_BANK.add(url)


@pytest.fixture
def settings(db_url: str) -> Settings:
    return Settings(database_url=db_url, content_root=ROOT / "questions", grading_workers=0)


@pytest.fixture
def client(settings: Settings) -> Iterator[TestClient]:
    from app.main import create_app

    url = settings.database_url
    if url in _HOLDS_BANK and not _syncs_the_bank(settings):
        _empty(url, content=True)
    with TestClient(create_app(settings)) as test_client:
        note_bank_synced(settings)
        yield test_client


def note_bank_synced(settings: Settings) -> None:
    """Called by each of BANK_FIXTURES once its app has started: the first time an app synced the
    real bank into this database, the tables as it left them are what a later test may keep."""
    url = settings.database_url
    if _syncs_the_bank(settings) and url not in _BANK_STAMP:
        _BANK_STAMP[url] = _content_stamp(url)


@pytest.fixture
def bank_root() -> Path:
    return ROOT / "questions"


def _tree_stamp(root: Path) -> tuple[tuple[str, int, int], ...]:
    """Every file under root with its modification time and size: what a reload would read."""
    # os.walk and os.stat, not Path.rglob: 12 ms for questions/ where rglob took 35, on every app start.
    stamp = []
    for folder, _, names in os.walk(root):
        for name in names:
            path = os.path.join(folder, name)
            with contextlib.suppress(FileNotFoundError):  # a dangling link is no file, as for rglob
                status = os.stat(path)
                stamp.append((path, status.st_mtime_ns, status.st_size))
    return tuple(sorted(stamp))


@pytest.fixture(autouse=True, scope="session")
def _one_route_analysis_per_process() -> Iterator[None]:
    """FastAPI's analysis of each endpoint's parameters and dependencies, done once per test process.

    FastAPI (0.16x) analyses every route again for every app that includes it (signature
    inspection and a model field per parameter, recursively through the dependencies), on the
    app's first request and on the first url_for of each router: 35% of the CPU of the route tests,
    which start an app per test (py-spy over tests/routes/test_security.py and
    test_hostile_inputs.py). The analysis depends only on the endpoint, its path and its
    dependencies, and the routes are module-level, shared by every app, so it is kept per
    (path, endpoint, dependencies) here. Only a module-level endpoint is kept (one made per app
    would never recur and would keep its app alive); dependency overrides are looked up on the app
    at each request, never in the analysis, so a test's overrides still apply. Each app still gets
    its own route contexts, body models and handlers.
    """
    import fastapi.routing

    real = getattr(fastapi.routing, "_build_dependant_with_parameterless_dependencies", None)
    if real is None:  # another FastAPI: it is analysed as it would be anyway
        yield
        return
    kept: dict[tuple[str, int, tuple[int, ...]], tuple[object, Any]] = {}

    def analysed(*, path: str, call: Any, dependencies: Any) -> Any:
        if "<locals>" in getattr(call, "__qualname__", "<locals>"):
            return real(path=path, call=call, dependencies=dependencies)
        key = (path, id(call), tuple(id(d) for d in dependencies))
        hit = kept.get(key)
        if hit is None:
            # The call and the dependencies are kept with the result, so their ids are never reused.
            hit = kept[key] = (
                (call, list(dependencies)),
                real(path=path, call=call, dependencies=dependencies),
            )
        return hit[1]

    fastapi.routing._build_dependant_with_parameterless_dependencies = analysed
    try:
        yield
    finally:
        fastapi.routing._build_dependant_with_parameterless_dependencies = real


@pytest.fixture(autouse=True, scope="session")
def _one_catalog_and_fork_server_per_process() -> Iterator[None]:
    """What every test app would otherwise redo at its start, done once per test process.

    - The catalog: an app loads and validates the whole of questions/ when it starts (0.1 s
      warm, 445 tests start one). A loaded catalog is kept per folder and reused while no file
      under it changed (a test that writes a bank of its own gets its own, and an edited file
      is read again), so what an app is given is what it would have loaded.
    - The fork server: a server's shutdown stops the sandbox (right for a server), so every test
      app with grading workers started a new one, 2 s of importing torch in its process each.
      Here the process's one fork server outlives the apps and stops when the process ends;
      a test that needs a fresh one still calls graders.sandbox.client.shutdown_shared.
    """
    import app.main
    import graders.runner

    real_load, real_shutdown = app.main.load_catalog, graders.runner.shutdown
    loaded: dict[Path, tuple[object, Any]] = {}

    def load_catalog(root: Path) -> Any:
        stamp = _tree_stamp(Path(root))
        kept = loaded.get(Path(root))
        if kept is None or kept[0] != stamp:
            kept = loaded[Path(root)] = (stamp, real_load(root))
        return kept[1]

    app.main.load_catalog = load_catalog  # type: ignore[assignment]
    graders.runner.shutdown = lambda: None
    try:
        yield
    finally:
        app.main.load_catalog, graders.runner.shutdown = real_load, real_shutdown
        real_shutdown()

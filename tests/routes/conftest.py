"""Fixtures the route tests share."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from fastapi.testclient import TestClient

from app.config import Settings
from app.main import create_app
from app.services.clock import ManualClock
from tests.conftest import note_bank_synced
from tests.services.factories import fast_settings

# The mock interview tests' server clock starts here (a Monday morning); a test moves it.
MOCK_START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


@pytest.fixture
def grading_client(db_url: str) -> Iterator[TestClient]:
    """An app with a real grading thread and a low rate limit (5 submissions a minute)."""
    settings = Settings(
        database_url=db_url, grading_workers=1, embedded_queue="memory", submissions_per_minute=5
    )
    with TestClient(create_app(settings)) as client:
        note_bank_synced(settings)
        yield client


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(MOCK_START)


@pytest.fixture
def app_client(db_url: str, clock: ManualClock) -> Iterator[TestClient]:
    """An app on the test's clock, with cheap hashing and no grading thread."""
    settings = fast_settings(db_url)
    app = create_app(settings)
    app.state.clock = clock
    with TestClient(app) as client:
        note_bank_synced(settings)
        yield client

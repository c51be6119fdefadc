"""Fixtures for the service tests: a database holding the question bank, and settings without fuzz."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlmodel import Session

from app.config import Settings
from app.db import make_engine
from app.services.content_sync import sync_bank
from tests.services.factories import catalog, fast_settings


@pytest.fixture
def settings(db_url: str) -> Settings:
    return fast_settings(db_url)


@pytest.fixture
def db(db_url: str) -> Iterator[Session]:
    """A session on a migrated database holding the question bank."""
    engine = make_engine(db_url)
    with Session(engine) as session:
        sync_bank(session=session, bank=catalog().bank)
        yield session
    engine.dispose()

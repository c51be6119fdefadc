"""Fixtures the route tests share."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from app.config import Settings
from app.main import create_app


@pytest.fixture
def grading_client(db_url: str) -> Iterator[TestClient]:
    """An app with a real grading thread and a low rate limit (5 submissions a minute)."""
    settings = Settings(
        database_url=db_url, grading_workers=1, embedded_queue="memory", submissions_per_minute=5
    )
    with TestClient(create_app(settings)) as client:
        yield client

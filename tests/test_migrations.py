"""The Alembic migrations build exactly the schema the models describe, on both backends."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlmodel import SQLModel

import app.models  # noqa: F401 - registers every table
from app.db import make_engine


def test_migrated_schema_matches_the_models(db_url: str) -> None:
    engine = make_engine(db_url)
    with engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), SQLModel.metadata)
    engine.dispose()
    assert diff == [], f"models and migrations disagree; write a migration: {diff}"

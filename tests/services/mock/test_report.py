"""app/services/mock/report.py: the coding question's outcome, from the submissions made during the
interview."""

from __future__ import annotations

import pytest
from sqlmodel import Session

from app.config import Settings
from app.services import mock as mocks
from tests.services.factories import catalog, make_user
from tests.services.mock.helpers import fake_submission, start


def test_the_coding_verdict_counts(db: Session, settings: Settings) -> None:
    user = make_user(db, guest_token="g")
    mock = start(db, settings, user, topics=("rope",), with_challenge=True)
    item = mocks.mock_items(session=db, mock=mock)[-1]
    assert item.kind == "challenge"
    fake_submission(db, user, item, "s1", "failed", passed=2)
    outcome = mocks.challenge_outcome(session=db, item=item, catalog=catalog())
    assert outcome.verdict == "failed" and outcome.score == pytest.approx(0.25) and outcome.code == "# s1"
    fake_submission(db, user, item, "s2", "passed", passed=4)
    fake_submission(db, user, item, "s3", None, passed=0)  # still grading
    outcome = mocks.challenge_outcome(session=db, item=item, catalog=catalog())
    assert outcome.passed and outcome.score == 1 and outcome.attempts == 3 and not outcome.final
    assert outcome.code == "# s2"  # the passing one counts

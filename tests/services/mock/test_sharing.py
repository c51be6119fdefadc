"""app/services/mock/sharing.py: a link to a scored interview, and revoking it."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlmodel import Session

from app.config import Settings
from app.services import mock as mocks
from app.services.errors import ServiceError
from tests.services.factories import make_user
from tests.services.mock.helpers import NOW, start


def test_sharing_needs_a_score_and_can_be_revoked(db: Session, settings: Settings) -> None:
    user = make_user(db, guest_token="g")
    mock = start(db, settings, user, topics=("rope",))
    with pytest.raises(ServiceError, match="Score"):
        mocks.share(session=db, mock=mock)
    mocks.finish(session=db, mock=mock, now=NOW + timedelta(minutes=1))
    mocks.score_mock(session=db, user=user, mock=mock, marks={}, settings=settings, now=NOW)
    token = mocks.share(session=db, mock=mock)
    assert len(token) >= 32 and mocks.share(session=db, mock=mock) == token
    assert mocks.get_shared(session=db, token=token) == mock
    mocks.revoke(session=db, mock=mock)
    assert mocks.get_shared(session=db, token=token) is None
    assert mocks.was_revoked(session=db, token=token) and not mocks.was_revoked(session=db, token="x" * 32)
    assert mocks.get_shared(session=db, token=mocks.REVOKED + token) is None
    assert mocks.share(session=db, mock=mock) != token  # a new link; the old one stays dead

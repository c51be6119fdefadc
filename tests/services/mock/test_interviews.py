"""app/services/mock/interviews.py: reading a user's interviews, which follow a guest into their account."""

from __future__ import annotations

from sqlmodel import Session, select

from app.config import Settings
from app.models import CardProgress, MockInterview
from app.services import accounts
from app.services import mock as mocks
from tests.services.factories import make_user
from tests.services.mock.helpers import start


def test_a_guests_interviews_move_to_the_account(db: Session, settings: Settings) -> None:
    account = make_user(db, email="a@example.com")
    guest = make_user(db, guest_token="guest-token")
    mock = start(db, settings, guest, topics=("rope",))
    mock_id, guest_id = mock.id, guest.id
    accounts.merge_users(session=db, source=guest, target=account)
    moved = db.get(MockInterview, mock_id)
    assert moved is not None and moved.user_id == account.id
    assert all(i.user_id == account.id for i in mocks.mock_items(session=db, mock=moved))
    assert mocks.get_mock(session=db, user_id=account.id, mock_id=mock_id) is not None
    assert mocks.get_mock(session=db, user_id=guest_id, mock_id=mock_id) is None
    assert not db.exec(select(CardProgress).where(CardProgress.user_id == guest_id)).all()

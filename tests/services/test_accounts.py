"""Accounts: hashing, the guest-to-account merge of every per-user table, export and deletion."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest
from fsrs import Rating
from sqlmodel import Session, SQLModel, select

from app.config import Settings
from app.models import CardProgress, Quiz, QuizItem, Review, Submission, User
from app.services import accounts, scheduling
from app.services import quiz as quizzes
from app.services.errors import ServiceError
from tests.services.factories import PASSWORD, make_user

NOW = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
# The tables `study` fills; USER_TABLES may list more (mock interviews), empty here.
STUDIED = (Review, QuizItem, Quiz, CardProgress, Submission)


def rows(db: Session, table: type[SQLModel], user_id: int) -> list:
    return list(db.exec(select(table).where(table.user_id == user_id)).all())  # type: ignore[attr-defined]


def study(db: Session, settings: Settings, user: User, *, card: str, rating: Rating, now: datetime) -> None:
    """One quiz, one review of `card`, one submission: a row in every per-user table."""
    quiz = quizzes.start_quiz(
        session=db,
        user=user,
        spec=quizzes.QuizSpec(topics=("rope",), size=1, kinds=("recall",)),
        settings=settings,
    )
    item = quizzes.quiz_items(session=db, quiz=quiz)[0]
    quizzes.answer_item(session=db, user=user, item=item, settings=settings, text="rotations", now=now)
    quizzes.rate_item(session=db, user=user, item=item, rating=Rating.Good, settings=settings, now=now)
    scheduling.review_card(
        session=db, user=user, card_id=card, rating=rating, source="recall", settings=settings, now=now
    )
    db.add(
        Submission(
            id=f"s{user.id}", user_id=user.id, challenge="kv-cache-bytes", code="x = 1", verdict="failed"
        )
    )
    db.commit()


def test_every_table_with_a_user_id_is_listed() -> None:
    with_user_id = {t.name for t in SQLModel.metadata.sorted_tables if "user_id" in t.c}
    assert with_user_id == {str(t.__tablename__) for t in accounts.USER_TABLES}


def test_an_app_left_to_its_defaults_hashes_at_rfc_9106s_cost(
    db: Session, monkeypatch: pytest.MonkeyPatch, db_url: str
) -> None:
    """The suite turns hashing down (tests/conftest.py); a server started without those two
    variables hashes with argon2id at 3 passes over 64 MiB, as its settings say."""
    monkeypatch.delenv("KVPREP_ARGON2_TIME_COST")
    monkeypatch.delenv("KVPREP_ARGON2_MEMORY_KIB")
    real = Settings(database_url=db_url)
    assert (real.argon2_time_cost, real.argon2_memory_kib) == (3, 65536)
    user = accounts.create_account(
        session=db, guest=None, email="ada@example.com", password=PASSWORD, settings=real
    )
    assert user.password_hash is not None and "$m=65536,t=3," in user.password_hash
    assert (
        accounts.authenticate(session=db, email="ada@example.com", password=PASSWORD, settings=real) == user
    )


def test_passwords_are_argon2_hashes(db: Session, settings: Settings) -> None:
    user = accounts.create_account(
        session=db, guest=None, email=" Ada@Example.COM ", password=PASSWORD, settings=settings
    )
    assert user.email == "ada@example.com" and user.password_hash.startswith("$argon2id$")
    assert PASSWORD not in user.password_hash
    assert (
        accounts.authenticate(session=db, email="ADA@example.com", password=PASSWORD, settings=settings)
        == user
    )
    assert (
        accounts.authenticate(session=db, email="ada@example.com", password="wrong one", settings=settings)
        is None
    )
    assert (
        accounts.authenticate(session=db, email="nobody@example.com", password=PASSWORD, settings=settings)
        is None
    )


@pytest.mark.parametrize(
    ("email", "password", "field"),
    [
        ("not-an-email", PASSWORD, "email"),
        ("a@example.com", "short", "password"),
        ("a@example.com", "x" * 300, "password"),
    ],
)
def test_bad_credentials_are_refused(
    db: Session, settings: Settings, email: str, password: str, field: str
) -> None:
    with pytest.raises(ServiceError) as info:
        accounts.create_account(session=db, guest=None, email=email, password=password, settings=settings)
    assert info.value.field == field


def test_one_account_per_email(db: Session, settings: Settings) -> None:
    accounts.create_account(
        session=db, guest=None, email="a@example.com", password=PASSWORD, settings=settings
    )
    with pytest.raises(ServiceError, match="already has an account"):
        accounts.create_account(
            session=db, guest=None, email="A@example.com", password=PASSWORD, settings=settings
        )


def test_sign_up_turns_the_guest_into_the_account(db: Session, settings: Settings) -> None:
    guest = make_user(db, guest_token="guest-token")
    study(db, settings, guest, card="how-rope-works", rating=Rating.Good, now=NOW)
    account = accounts.create_account(
        session=db, guest=guest, email="a@example.com", password=PASSWORD, settings=settings
    )
    assert account.id == guest.id and account.guest_token is None and not account.is_guest
    for table in STUDIED:
        assert rows(db, table, account.id), table


def test_merge_moves_every_row_and_keeps_the_newer_memory(db: Session, settings: Settings) -> None:
    account = make_user(db, email="a@example.com")
    guest = make_user(db, guest_token="guest-token")
    guest.interview_date = date(2026, 4, 1)
    # Both studied how-rope-works: the account long ago (Again), the guest just now (Easy).
    study(db, settings, account, card="how-rope-works", rating=Rating.Again, now=NOW - timedelta(days=30))
    study(db, settings, guest, card="how-rope-works", rating=Rating.Easy, now=NOW)
    # Only the account studied this one: it stays.
    scheduling.review_card(
        session=db, user=account, card_id="kv-formula-gpt2-small", rating=Rating.Good, source="recall",
        settings=settings, now=NOW,
    )  # fmt: skip
    db.commit()
    before = {t: len(rows(db, t, account.id)) + len(rows(db, t, guest.id)) for t in STUDIED}
    # Cards both studied (how-rope-works, and the quiz's card if it is another) merge into one memory each.
    shared = {p.card_id for p in rows(db, CardProgress, account.id)} & {
        p.card_id for p in rows(db, CardProgress, guest.id)
    }
    assert "how-rope-works" in shared
    guest_id = guest.id

    accounts.merge_users(session=db, source=guest, target=account)

    assert db.get(User, guest_id) is None
    for table in STUDIED:
        assert not rows(db, table, guest_id)
        expected = before[table] - (len(shared) if table is CardProgress else 0)  # two memories became one
        assert len(rows(db, table, account.id)) == expected, table
    rope = scheduling.get_progress(session=db, user_id=account.id, card_id="how-rope-works")
    assert (
        rope is not None and rope.last_review == NOW and rope.due > NOW + timedelta(days=1)
    )  # the guest's Easy
    assert (
        scheduling.get_progress(session=db, user_id=account.id, card_id="kv-formula-gpt2-small") is not None
    )
    assert len(rows(db, Review, account.id)) == 5  # 2 quiz ratings + 2 reviews + 1
    db.refresh(account)
    assert account.interview_date == date(2026, 4, 1)


def test_export_has_every_row_and_no_secret(db: Session, settings: Settings) -> None:
    user = accounts.create_account(
        session=db, guest=None, email="a@example.com", password=PASSWORD, settings=settings
    )
    other = make_user(db, email="b@example.com")
    study(db, settings, user, card="how-rope-works", rating=Rating.Good, now=NOW)
    study(db, settings, other, card="how-rope-works", rating=Rating.Good, now=NOW)
    data = accounts.export_user(session=db, user=user)
    assert data["user"]["email"] == "a@example.com" and "password_hash" not in data["user"]
    assert "argon2" not in repr(data)
    assert set(data["tables"]) == {str(t.__tablename__) for t in accounts.USER_TABLES}
    for table in STUDIED:
        table_rows = data["tables"][str(table.__tablename__)]
        assert table_rows and {r["user_id"] for r in table_rows} == {user.id}, table
    assert len(data["tables"]["review"]) == 2


def test_delete_removes_the_user_and_all_of_their_rows_only(db: Session, settings: Settings) -> None:
    user = make_user(db, email="a@example.com")
    other = make_user(db, email="b@example.com")
    study(db, settings, user, card="how-rope-works", rating=Rating.Good, now=NOW)
    study(db, settings, other, card="how-rope-works", rating=Rating.Good, now=NOW)
    user_id = user.id
    accounts.delete_user(session=db, user=user)
    db.expire_all()
    assert db.get(User, user_id) is None
    for table in STUDIED:
        assert not rows(db, table, user_id)
        assert rows(db, table, other.id)

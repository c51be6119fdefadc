"""Accounts: sign-up, log-in, the guest-to-account merge, export and deletion.

Passwords are hashed with argon2id through pwdlib. Every table that holds a user's rows is
listed once, in USER_TABLES: the guest-to-account merge, the JSON export and the deletion
all walk that list, so a new per-user table (mock interviews, ...) only has to add itself.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from functools import lru_cache
from typing import Any

from pwdlib import PasswordHash
from pwdlib.hashers.argon2 import Argon2Hasher
from sqlalchemy import Column, delete, update
from sqlalchemy import inspect as sa_inspect
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, SQLModel, col, select

from app.config import Settings
from app.models import (
    ApiToken,
    CardProgress,
    FsrsFit,
    LabRun,
    MockInterview,
    MockItem,
    Quiz,
    QuizItem,
    Review,
    Submission,
    User,
    utcnow,
)
from app.services.errors import Conflict, Forbidden, InvalidInput

# Every table with a `user_id` column, children before parents (the order deletion needs).
# tests/services/test_accounts.py fails when a table with a user_id is missing here.
USER_TABLES: tuple[type[SQLModel], ...] = (
    ApiToken,
    Review,
    QuizItem,
    Quiz,
    MockItem,
    MockInterview,
    CardProgress,
    Submission,
    LabRun,
    FsrsFit,
)

# Columns the JSON export leaves out: a token's hash is of no use to its owner.
EXPORT_HIDDEN: dict[type[SQLModel], set[str]] = {ApiToken: {"token_hash"}}

# The characters str.strip() removes (Python's whitespace), spelled out: `\s` means three things
# here (JSON Schema's is ECMA's, pydantic's is Rust's Unicode White_Space, Python's its own: they
# part on \x1c-\x1f, \x85 and \ufeff), so the sign-up schema, the route's validation and this check
# would each judge an address holding one of those differently.
SPACE = r"\t\n\u000b\u000c\r\u001c-\u001f \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
_PART = rf"[^@{SPACE}]+"
EMAIL = re.compile(rf"^{_PART}@{_PART}\.{_PART}$")
# The same address with the surroundings normalize_email trims, as a sign-up's JSON may send it.
PADDED_EMAIL = rf"^[{SPACE}]*{_PART}@{_PART}\.{_PART}[{SPACE}]*$"


def normalize_email(email: str) -> str:
    return email.strip().lower()


def check_credentials(*, email: str, password: str, settings: Settings) -> dict[str, str]:
    """field -> problem, for a sign-up form; empty when both are acceptable."""
    problems = {}
    if len(email) > 254 or not EMAIL.match(email):
        problems["email"] = "Enter an email address like name@example.com."
    if len(password) < settings.password_min_length:
        problems["password"] = f"Use at least {settings.password_min_length} characters."
    elif len(password) > settings.password_max_length:
        problems["password"] = (
            f"Use at most {settings.password_max_length} characters: this one has {len(password):,}."
        )
    return problems


@lru_cache(maxsize=4)
def _hasher(time_cost: int, memory_kib: int) -> PasswordHash:
    return PasswordHash((Argon2Hasher(time_cost=time_cost, memory_cost=memory_kib),))


def password_hasher(settings: Settings) -> PasswordHash:
    return _hasher(settings.argon2_time_cost, settings.argon2_memory_kib)


@lru_cache(maxsize=4)
def _dummy_hash(time_cost: int, memory_kib: int) -> str:
    return _hasher(time_cost, memory_kib).hash("not-a-real-password")


def fingerprint(user: User, secret_key: str) -> str:
    """Ties a session to the account's password hash and session version: a new password, a
    log-out or a new account ends the sessions signed before."""
    message = f"{user.id}:{user.session_version}:{user.password_hash}".encode()
    return hmac.new(secret_key.encode(), message, hashlib.sha256).hexdigest()[:32]


def end_sessions(*, session: Session, user: User) -> None:
    """Log-out, server-side: every cookie signed for this account so far stops working. Commits."""
    session.exec(
        update(User)  # type: ignore[call-overload]
        .where(col(User.id) == user.id)
        .values(session_version=User.session_version + 1)  # atomic, whatever other requests do
    )
    session.commit()
    session.refresh(user)


def change_password(*, session: Session, user: User, current: str, new: str, settings: Settings) -> None:
    """Check the current password, store the new one, end every session (the caller signs the
    current one in again). Raises a ServiceError naming the field at fault. Commits."""
    hasher = password_hasher(settings)
    if user.password_hash is None or not hasher.verify(current, user.password_hash):
        raise Forbidden("That is not your current password.", "current_password")
    problems = check_credentials(email=user.email or "", password=new, settings=settings)
    if "password" in problems:
        raise InvalidInput(problems["password"], "new_password")
    user.password_hash = hasher.hash(new)
    user.session_version += 1
    session.add(user)
    session.commit()
    session.refresh(user)


def find_account(*, session: Session, email: str) -> User | None:
    return session.exec(select(User).where(User.email == normalize_email(email))).first()


def create_account(
    *, session: Session, guest: User | None, email: str, password: str, settings: Settings
) -> User:
    """Sign up. The visiting guest's row becomes the account, so all of its progress comes along."""
    email = normalize_email(email)
    problems = check_credentials(email=email, password=password, settings=settings)
    if problems:
        field, message = next(iter(problems.items()))
        raise InvalidInput(message, field)
    if find_account(session=session, email=email) is not None:
        raise Conflict("That email already has an account: log in instead.", "email")
    user = guest if guest is not None and guest.is_guest else User()
    user.email = email
    user.password_hash = password_hasher(settings).hash(password)
    user.guest_token = None
    user.last_login_at = utcnow()
    session.add(user)
    try:
        session.commit()
    except IntegrityError:  # the same email, signed up a moment ago by another request
        session.rollback()
        raise Conflict("That email already has an account: log in instead.", "email") from None
    session.refresh(user)
    return user


def authenticate(*, session: Session, email: str, password: str, settings: Settings) -> User | None:
    """The account when the password matches; None otherwise, in about the same time either way."""
    hasher = password_hasher(settings)
    user = find_account(session=session, email=email)
    if user is None or user.password_hash is None:
        hasher.verify(password, _dummy_hash(settings.argon2_time_cost, settings.argon2_memory_kib))
        return None
    valid, updated = hasher.verify_and_update(password, user.password_hash)
    if not valid:
        return None
    if updated is not None:  # the cost settings changed since this hash was made
        user.password_hash = updated
    user.last_login_at = utcnow()
    session.add(user)
    session.commit()
    session.refresh(user)
    return user


def _user_id_column(table: type[SQLModel]) -> Column[Any]:
    return table.__table__.c["user_id"]  # type: ignore[attr-defined,no-any-return]


def merge_users(*, session: Session, source: User, target: User) -> None:
    """Move every row of `source` (a guest) to `target` (the account logging in), then delete `source`.

    Where both have studied the same card, the more recently reviewed memory state wins; every
    review, quiz and submission is kept. Commits.
    """
    if source.id is None or target.id is None or source.id == target.id:
        return
    theirs = {
        p.card_id: p for p in session.exec(select(CardProgress).where(CardProgress.user_id == target.id))
    }
    for mine in session.exec(select(CardProgress).where(CardProgress.user_id == source.id)).all():
        other = theirs.get(mine.card_id)
        if other is None:
            continue
        newer_is_mine = (mine.last_review is not None) and (
            other.last_review is None or mine.last_review > other.last_review
        )
        session.delete(other if newer_is_mine else mine)
    session.flush()
    for table in USER_TABLES:
        column = _user_id_column(table)
        session.exec(
            update(table).where(column == source.id).values({column: target.id})  # type: ignore[call-overload]
        )
    if target.desired_retention is None:
        target.desired_retention = source.desired_retention
    if target.interview_date is None:
        target.interview_date = source.interview_date
    if target.fsrs_parameters is None:
        target.fsrs_parameters = source.fsrs_parameters
    session.add(target)
    session.delete(source)
    session.commit()


def _column_names(table: type[SQLModel]) -> dict[str, str]:
    """The column's name of each attribute named otherwise (QuizItem.quiz_id is column session_id):
    the export names a row's fields as its table does."""
    return {
        prop.key: prop.columns[0].name
        for prop in sa_inspect(table).column_attrs
        if prop.key != prop.columns[0].name
    }


def export_user(*, session: Session, user: User) -> dict[str, Any]:
    """Everything stored about this user, as JSON-ready data (no password hash)."""
    assert user.id is not None
    tables: dict[str, list[dict[str, Any]]] = {}
    for table in reversed(USER_TABLES):  # parents first reads better
        rows = session.exec(select(table).where(_user_id_column(table) == user.id)).all()
        hidden = EXPORT_HIDDEN.get(table, set())
        named = _column_names(table)
        tables[str(table.__tablename__)] = [
            {named.get(key, key): value for key, value in row.model_dump(mode="json", exclude=hidden).items()}
            for row in rows
        ]
    profile = user.model_dump(mode="json", exclude={"password_hash", "guest_token"})
    return {
        "format": "kvprep-export",
        "version": 1,
        "exported_at": utcnow().isoformat(),
        "user": {**profile, "is_guest": user.is_guest},
        "tables": tables,
    }


def delete_user(*, session: Session, user: User) -> None:
    """Delete the user and every row of theirs. Commits."""
    assert user.id is not None
    for table in USER_TABLES:
        session.exec(delete(table).where(_user_id_column(table) == user.id))  # type: ignore[call-overload]
    session.exec(delete(User).where(col(User.id) == user.id))  # type: ignore[call-overload]
    session.commit()

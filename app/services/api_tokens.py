"""Personal API tokens: for scripts and `kvprep submit`, sent as `Authorization: Bearer <token>`.

A token is 32 random bytes (URL-safe base64) after a `kvp_` prefix, shown to its owner once, when
it is made. Only its SHA-256 is stored: a token is as hard to guess as a 256-bit key, so a plain
hash is enough (no salt or slow hash, which protect low-entropy passwords), and a copy of the
database holds nothing that works as a token.

A token acts for its account on the JSON API only, and never for what proves the account's owner
is at the keyboard: deleting the account, changing its password, log-in and log-out, or making
more tokens (app/deps.py refuses them; HTML pages and forms ignore it). Its requests count in the
account's own rate-limit buckets, and a wrong token counts as a failed log-in from its address.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import datetime, timedelta

from sqlalchemy import delete, func
from sqlmodel import Session, col, select

from app.models import ApiToken, User, utcnow
from app.services.errors import Conflict, Forbidden, InvalidInput, NotFound

TOKEN_PREFIX = "kvp_"
# What the account page shows of a token: enough to tell two apart, far too little to guess one.
SHOWN_CHARACTERS = 10
NAME_MAX_LENGTH = 60
# A token longer than this is not one of ours: refused before it is hashed.
TOKEN_MAX_LENGTH = 100
# "Last used" is written at most this often, so an API client does not cost a write per request.
LAST_USED_PRECISION = timedelta(minutes=1)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def create_token(*, session: Session, user: User, name: str, limit: int) -> tuple[ApiToken, str]:
    """A new token for the account: its row and the token itself, which is never stored. Commits."""
    if user.is_guest or user.id is None:
        raise Forbidden("Guests have no API tokens: sign up first.", "name")
    name = " ".join(name.split())
    if not name:
        raise InvalidInput("Name the token (where it will be used, e.g. “laptop”).", "name")
    if len(name) > NAME_MAX_LENGTH:
        raise InvalidInput(f"Use at most {NAME_MAX_LENGTH} characters for the name.", "name")
    held = session.exec(select(func.count()).where(ApiToken.user_id == user.id)).one()
    if held >= limit:
        raise Conflict(f"This account already holds {limit} tokens: revoke one first.", "name")
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    row = ApiToken(user_id=user.id, name=name, token_hash=token_hash(token), prefix=token[:SHOWN_CHARACTERS])
    session.add(row)
    session.commit()
    session.refresh(row)
    return row, token


def list_tokens(*, session: Session, user: User) -> list[ApiToken]:
    """The account's tokens, newest first."""
    query = select(ApiToken).where(ApiToken.user_id == user.id).order_by(col(ApiToken.id).desc())
    return list(session.exec(query).all())


def revoke_token(*, session: Session, user: User, token_id: int) -> ApiToken:
    """Delete one of the account's tokens: it stops working at once, on every server. Commits."""
    row = session.get(ApiToken, token_id)
    if row is None or row.user_id != user.id:
        raise NotFound("Token not found (already revoked?)")
    session.exec(delete(ApiToken).where(col(ApiToken.id) == token_id))  # type: ignore[call-overload]
    session.commit()
    return row


def account_for_token(*, session: Session, token: str, now: datetime | None = None) -> User | None:
    """The account a token acts for; None for a token that is not (or no longer) one."""
    if not token.startswith(TOKEN_PREFIX) or len(token) > TOKEN_MAX_LENGTH:
        return None
    row = session.exec(select(ApiToken).where(ApiToken.token_hash == token_hash(token))).first()
    if row is None:
        return None
    user = session.get(User, row.user_id)
    if user is None or user.is_guest:
        return None
    now = now or utcnow()
    last = row.last_used_at
    if last is not None and last.tzinfo is None:
        last = last.replace(tzinfo=now.tzinfo)
    if last is None or now - last >= LAST_USED_PRECISION:
        row.last_used_at = now
        session.add(row)
        session.commit()
        session.refresh(user)
    return user

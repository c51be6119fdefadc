"""Log-in and sign-up take in only this browser's guest (issue 21, item 6: the planted guest cookie).

Two browsers on one app: the planter's, whose guest keeps a quiz, and the owner's. The planter's
session cookie, copied into the owner's browser, must bring none of the planter's rows into the
owner's account, on log-in or on sign-up; the owner's own guest progress, made in the owner's
browser, still follows them in.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session, col, select

from app.main import create_app
from app.models import Quiz
from tests.services.factories import fast_settings, login, other_client, signup, start_quiz

OWNER = "owner@example.com"
FETCH = {"X-Requested-With": "fetch"}


@pytest.fixture
def client(db_url: str) -> Iterator[TestClient]:
    with TestClient(create_app(fast_settings(db_url))) as test_client:
        yield test_client


def quiz_owners(client: TestClient) -> dict[str, int | None]:
    with Session(client.app.state.engine) as session:  # type: ignore[attr-defined]
        return {q.id: q.user_id for q in session.exec(select(Quiz).order_by(col(Quiz.id)))}


def plant(planter: TestClient, victim: TestClient) -> None:
    """The planter's session cookie in the victim's browser; the victim's device cookie stays."""
    theirs = next(c for c in planter.cookies.jar if c.name == "kvprep_session")
    victim.cookies.delete("kvprep_session")
    victim.cookies.set(theirs.name, theirs.value or "", domain=theirs.domain, path=theirs.path)


def test_a_planted_guest_cookie_brings_nothing_into_the_account_on_log_in(client: TestClient) -> None:
    owner = other_client(client)
    signup(owner, OWNER)
    owner.post("/api/auth/logout", headers=FETCH)
    planter = other_client(client)
    planted = start_quiz(planter)["id"]
    planter_guest = quiz_owners(client)[planted]
    assert owner.get("/").status_code == 200 and owner.cookies.get("kvprep_device")

    plant(planter, owner)
    me = login(owner, OWNER)
    assert quiz_owners(client)[planted] == planter_guest != me["id"]

    # The owner's own guest, in the owner's browser, follows them into the account.
    owner.post("/api/auth/logout", headers=FETCH)
    mine = start_quiz(owner)["id"]
    assert login(owner, OWNER)["id"] == me["id"]
    assert quiz_owners(client)[mine] == me["id"]
    assert quiz_owners(client)[planted] == planter_guest


def test_a_planted_guest_cookie_does_not_become_the_new_account(client: TestClient) -> None:
    planter = other_client(client)
    planted = start_quiz(planter)["id"]
    planter_guest = quiz_owners(client)[planted]
    newcomer = other_client(client)
    newcomer.get("/")
    plant(planter, newcomer)
    account = signup(newcomer, "new@example.com")
    assert account["id"] != planter_guest
    assert quiz_owners(client)[planted] == planter_guest
    # The planter still has their own guest, in their own browser.
    assert start_quiz(planter)["id"] and quiz_owners(client)[planted] == planter_guest


def test_the_guest_of_this_browser_becomes_the_account_on_sign_up(client: TestClient) -> None:
    browser = other_client(client)
    mine = start_quiz(browser)["id"]
    guest = quiz_owners(client)[mine]
    assert signup(browser, "me@example.com")["id"] == guest  # the guest's row became the account

"""Quizzes through the pages and the API: every kind of question, due dates, and nobody else's quiz."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from fastapi.testclient import TestClient
from fsrs import Card as FsrsCard
from fsrs import Scheduler
from sqlmodel import Session, select

from app.config import Settings
from app.models import QuizItem, Review
from app.services.clock import ManualClock
from app.services.scheduling import parse_rating
from tests.services.factories import csrf, fast_settings, finish_quiz, other_client, signup, start_quiz


@pytest.fixture
def settings(db_url: str) -> Settings:
    return fast_settings(db_url)


def payloads(client: TestClient, quiz_id: int) -> dict[int, QuizItem]:
    """The frozen questions with their answers, read straight from the database."""
    with Session(client.app.state.engine) as session:  # type: ignore[attr-defined]
        items = session.exec(select(QuizItem).where(QuizItem.quiz_id == quiz_id)).all()
        return {i.position: i for i in items}


def test_a_quiz_through_the_html_pages(client: TestClient) -> None:
    signup(client, "a@example.com")
    token = csrf(client, "/quiz")
    form = {
        "csrf_token": token,
        "mode": "topics",
        "topics": ["kv-memory", "mha-mqa-gqa"],
        "size": "5",
        "kinds": ["recall", "choice", "numeric"],
    }
    response = client.post("/quiz", data=form, follow_redirects=False)
    assert response.status_code == 303
    quiz_url = response.headers["location"]
    quiz_id = int(quiz_url.rsplit("/", 1)[1])
    items = payloads(client, quiz_id)
    assert sorted({i.kind for i in items.values()}) == ["choice", "numeric", "recall"]

    # The first asking of each card: recall rated Good, choice and numeric answered wrong. Each
    # miss comes back at the end, asked afresh, and is answered right there.
    missed = sum(1 for i in items.values() if i.kind != "recall")
    for position in range(5 + missed):
        page = client.get(quiz_url)  # redirects to the current question
        assert page.url.path == f"{quiz_url}/items/{position}"
        items = payloads(client, quiz_id)
        # Every miss so far has queued its repeat.
        assert len(items) == 5 + sum(1 for p in range(min(position, 5)) if items[p].kind != "recall")
        item = items[position]
        action = f"{quiz_url}/items/{position}"
        if position >= 5:
            assert item.repeat_of is not None and "asked again, afresh: you missed it" in page.text
            answer_right(client, token, action, item)
            continue
        if item.kind == "recall":
            assert 'name="answer"' in page.text and "rating-buttons" not in page.text
            client.post(action + "/answer", data={"csrf_token": token, "answer": "K and V per layer"})
            revealed = client.get(action).text
            assert "K and V per layer" in revealed and "tick the key points" in revealed
            assert re.search(r"Good <small>10 min</small>", revealed)  # FSRS's second learning step
            done = client.post(
                action + "/rate", data={"csrf_token": token, "rating": "good", "key_points": ["0"]}
            )
            assert done.status_code == 200 and "due again in 10 min" in done.text
            assert "It comes back" not in done.text
        elif item.kind == "choice":
            assert 'name="picked"' in page.text
            wrong = next(i for i, o in enumerate(item.payload["options"]) if not o["correct"])
            shown = client.post(action + "/answer", data={"csrf_token": token, "picked": [str(wrong)]}).text
            assert "Why it is wrong" in shown and "counts as Again" in shown
            assert "at the end of this quiz, with options drawn anew" in shown
        else:
            assert 'name="value"' in page.text and "config.json" in page.text
            shown = client.post(action + "/answer", data={"csrf_token": token, "value": "0.001"}).text
            assert (
                "Not quite" in shown
                and "Worked solution" in shown
                and '<details class="worked-solution" open' in shown
                and "at the end of this quiz, with a new problem" in shown
            )
    summary = client.get(quiz_url)
    assert "Quiz finished" in summary.text and summary.text.count('class="due-cell"') == 5 + missed
    assert summary.text.count("(asked again)") == missed
    assert client.get("/quiz").status_code == 200 and f'href="/quiz/{quiz_id}"' in client.get("/quiz").text


def answer_right(client: TestClient, token: str, action: str, item: QuizItem) -> None:
    if item.kind == "choice":
        right = [str(i) for i, o in enumerate(item.payload["options"]) if o["correct"]]
        shown = client.post(action + "/answer", data={"csrf_token": token, "picked": right}).text
    else:
        unit = "bytes" if item.payload["dimension"] == "bytes" else ""
        data = {"csrf_token": token, "value": str(item.payload["answer"]), "unit": unit}
        shown = client.post(action + "/answer", data=data).text
    assert "counts as Again" not in shown and "It comes back" not in shown


def test_the_quiz_form_needs_its_csrf_token(client: TestClient) -> None:
    client.get("/quiz")
    assert (
        client.post("/quiz", data={"topics": ["rope"], "size": "2", "kinds": ["recall"]}).status_code == 403
    )


def test_the_quiz_form_explains_what_it_cannot_do(client: TestClient) -> None:
    token = csrf(client, "/quiz")
    page = client.post(
        "/quiz", data={"csrf_token": token, "mode": "due", "difficulty": "hard", "size": "3", "kinds": []}
    )
    assert page.status_code == 422 and "at least one kind" in page.text
    numeric_rope = {"csrf_token": token, "topics": ["rope"], "size": "3", "kinds": ["numeric"]}
    page = client.post("/quiz", data=numeric_rope)
    assert page.status_code == 409 and "No card matches" in page.text  # the bank decides: a Conflict


def test_a_quiz_through_the_api(client: TestClient) -> None:
    quiz = start_quiz(client, topics=["kv-memory"], size=3)
    assert quiz["current"] == 0 and {i["kind"] for i in quiz["items"]} == {"recall", "choice", "numeric"}
    items = payloads(client, quiz["id"])
    base = f"/api/quizzes/{quiz['id']}/items"
    for position, item in items.items():
        view = client.get(f"{base}/{position}").json()
        assert view["state"] == "open" and "key_points" not in view and "answer" not in view
        if item.kind == "recall":
            assert client.post(f"{base}/{position}/rate", json={"rating": "good"}).status_code == 409
            revealed = client.post(f"{base}/{position}/answer", json={"answer": "keys and values"}).json()
            assert revealed["state"] == "revealed" and revealed["key_points"]
            rated = client.post(
                f"{base}/{position}/rate", json={"rating": "easy", "key_points": [0, 1]}
            ).json()
            assert rated["rating"] == "easy" and rated["due"]
        elif item.kind == "choice":
            right = [i for i, o in enumerate(item.payload["options"]) if o["correct"]]
            result = client.post(f"{base}/{position}/answer", json={"picked": right}).json()
            assert result["correct"] is True and result["rating"] == "good"
        else:
            unit = item.payload["unit"] if item.payload["dimension"] == "bytes" else None
            value = item.payload["answer_text"].split()[0].rstrip("x")
            result = client.post(f"{base}/{position}/answer", json={"value": value, "unit": unit}).json()
            assert result["correct"] is True and result["rating"] == "good" and result["solution"]
        again = client.post(f"{base}/{position}/answer", json={"answer": "again"})
        assert again.status_code == 409
    done = client.get(f"/api/quizzes/{quiz['id']}").json()
    assert done["finished_at"] and done["current"] is None and all(i["due"] for i in done["items"])


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({"topics": ["no-such-topic"]}, 422),
        ({"size": 0}, 422),
        ({"size": 51}, 422),
        ({"kinds": []}, 422),
        ({"kinds": ["essay"]}, 422),
        ({"mode": "random"}, 422),
        ({"mode": "due", "topics": ["rope"], "difficulty": "hard", "kinds": ["numeric"]}, 409),  # nothing due
        ({"extra": 1}, 422),
    ],
)
def test_bad_quiz_requests(client: TestClient, body: dict, status: int) -> None:
    assert client.post("/api/quizzes", json=body).status_code == status


def test_due_now_mode_brings_back_what_was_failed(client: TestClient) -> None:
    clock = client.app.state.clock = ManualClock(ticking=True)  # type: ignore[attr-defined]
    quiz = start_quiz(client, topics=["rope"], size=2, kinds=["recall"])
    finish_quiz(client, quiz, rating="again")
    assert client.get("/api/progress").json()["due"]["now"] == 0  # Again: back in 1 minute
    clock.advance(90)
    assert client.get("/api/progress").json()["due"]["now"] == 2
    due = start_quiz(client, mode="due", topics=[], size=20)
    assert [i["card_id"] for i in due["items"][:2]] == [i["card_id"] for i in quiz["items"]]
    assert len(due["items"]) == 2 + 8  # then what is left of today's 10 new cards


def test_nobody_can_read_or_answer_someone_elses_quiz(client: TestClient) -> None:
    signup(client, "owner@example.com")
    quiz = start_quiz(client, topics=["kv-memory"], size=3)
    qid = quiz["id"]
    intruder = other_client(client)
    signup(intruder, "intruder@example.com")
    token = csrf(intruder)
    for path in (
        f"/api/quizzes/{qid}",
        f"/api/quizzes/{qid}/items/0",
        f"/quiz/{qid}",
        f"/quiz/{qid}/items/0",
    ):
        assert intruder.get(path).status_code == 404, path
    assert (
        intruder.post(f"/api/quizzes/{qid}/items/0/answer", json={"answer": "x", "picked": [0]}).status_code
        == 404
    )
    assert intruder.post(f"/api/quizzes/{qid}/items/0/rate", json={"rating": "easy"}).status_code == 404
    html = intruder.post(f"/quiz/{qid}/items/0/answer", data={"csrf_token": token, "answer": "x"})
    assert html.status_code == 404
    assert (
        intruder.post(f"/quiz/{qid}/items/0/rate", data={"csrf_token": token, "rating": "easy"}).status_code
        == 404
    )
    assert intruder.get("/api/quizzes").json() == []
    # The owner's quiz is untouched.
    assert all(i["state"] == "open" for i in client.get(f"/api/quizzes/{qid}").json()["items"])
    # A missing quiz looks the same as someone else's.
    assert client.get("/api/quizzes/999999").status_code == 404
    assert client.get(f"/api/quizzes/{qid}/items/99").status_code == 404


def test_each_rating_sets_the_due_date_fsrs_gives(client: TestClient) -> None:
    quiz = start_quiz(client, topics=["rope", "flashattention"], size=4, kinds=["recall"])
    ratings = ["again", "hard", "good", "easy"]
    base = f"/api/quizzes/{quiz['id']}/items"
    for position, rating in enumerate(ratings):
        client.post(f"{base}/{position}/answer", json={})
        assert client.post(f"{base}/{position}/rate", json={"rating": rating}).json()["rating"] == rating
    with Session(client.app.state.engine) as session:  # type: ignore[attr-defined]
        reviews = {r.card_id: r for r in session.exec(select(Review)).all()}
    scheduler = Scheduler(desired_retention=0.9, enable_fuzzing=False)
    for item, rating in zip(quiz["items"], ratings, strict=True):
        review = reviews[item["card_id"]]
        expected, _ = scheduler.review_card(FsrsCard(card_id=1), parse_rating(rating), review.reviewed_at)
        assert review.due_after == expected.due, rating
    intervals = [reviews[i["card_id"]].due_after - reviews[i["card_id"]].reviewed_at for i in quiz["items"]]
    assert intervals[:3] == [timedelta(minutes=1), timedelta(minutes=5.5), timedelta(minutes=10)]
    assert intervals[3] >= timedelta(days=1)


def test_a_missed_problem_with_none_new_left_comes_back_as_recall(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = csrf(client, "/quiz")
    form = {"csrf_token": token, "topics": ["kv-memory"], "size": "2", "kinds": ["recall", "numeric"]}
    quiz_url = client.post("/quiz", data=form, follow_redirects=False).headers["location"]
    quiz_id = int(quiz_url.rsplit("/", 1)[1])
    position = next(p for p, i in payloads(client, quiz_id).items() if i.kind == "numeric")
    monkeypatch.setattr("app.services.quiz_learning.questions.build_numeric", lambda card, rng, asked: None)
    action = f"{quiz_url}/items/{position}"
    shown = client.post(action + "/answer", data={"csrf_token": token, "value": "0.001"}).text
    assert "as a recall question (no new problem is left for this card)" in shown
    repeat = client.get(f"{quiz_url}/items/2").text
    assert "asked again, afresh: you missed it" in repeat and 'name="answer"' in repeat

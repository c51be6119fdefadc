"""app/services/mock/interviewer.py: the next prompt listens to the answer (probe, harder, number, nudge)."""

from __future__ import annotations

from sqlmodel import Session

from app.config import Settings
from app.services import mock as mocks
from app.services.card_content import CardContent, FollowUp, WrongAnswer
from app.services.mock.interviewer import next_prompt
from tests.services.factories import catalog, make_user
from tests.services.mock.helpers import NOW, start

CARD = CardContent(
    question="What does the KV cache store?",
    key_points=(
        "Keys and values of every past token, per layer and KV head.",
        "Queries are not stored: each is used once.",
        "Llama-2-7B keeps 512 KiB per token in fp16.",
    ),
    follow_ups=(
        FollowUp("Why is the query not cached?", "It is read once.", (1,), "same"),
        FollowUp("Per query head or per KV head?", "Per KV head.", (0,), "same"),
        FollowUp("How does GQA change the size?", "Divides it by the group.", (0, 2), "harder"),
    ),
    wrong_answers=(WrongAnswer('"It caches the attention scores."', "Scores depend on the new query."),),
    sources=(),
    notes="",
    figures={},
)


def test_a_missed_point_gets_the_follow_up_that_probes_the_most_important_one() -> None:
    prompt = next_prompt(CARD, "it keeps keys and values for 512 KiB a token", covered={0, 2})
    assert (prompt.kind, prompt.question) == ("probe", "Why is the query not cached?")
    assert prompt.reason.startswith("asked because you did not mention key point 2: “Queries are not stored")
    # Two points missed: the first (most important) decides, a `same` follow-up before a `harder` one.
    assert next_prompt(CARD, "512 KiB", covered={2}).question == "Per query head or per KV head?"


def test_everything_covered_gets_a_harder_follow_up() -> None:
    prompt = next_prompt(CARD, "keys and values, never queries, 512 KiB per token", covered={0, 1, 2})
    assert (prompt.kind, prompt.question, prompt.difficulty) == (
        "harder",
        "How does GQA change the size?",
        "harder",
    )


def test_no_number_gets_a_request_for_one() -> None:
    prompt = next_prompt(CARD, "keys and values, never the queries, a lot per token", covered={0, 1, 2})
    assert prompt.kind == "number"
    assert prompt.question.endswith("“Llama-2-7B keeps ___ KiB per token in fp16.”")
    assert "key point 3" in prompt.reason and prompt.answer == CARD.key_points[2]


def test_an_echoed_wrong_answer_gets_a_nudge() -> None:
    text = "It caches the attention scores so they need not be recomputed, about 512 KiB."
    prompt = next_prompt(CARD, text, covered={2})
    assert prompt.kind == "nudge"
    assert prompt.question.startswith("You said “It caches the attention scores.”")
    assert prompt.question.endswith("Per query head or per KV head?")
    assert "echoed a common wrong answer" in prompt.reason
    assert next_prompt(CARD, text, covered={2}) == prompt  # deterministic for a given answer


def test_an_answer_that_covered_everything_is_not_nudged_for_sharing_a_wrong_answers_words() -> None:
    """Issue 22: a full answer talks about the same things as the wrong answers; it gets the
    harder question, not a nudge (which the page introduced as digging deeper)."""
    text = "It caches the attention scores' inputs, keys and values, never queries, 512 KiB."
    assert next_prompt(CARD, text, covered={2}).kind == "nudge"
    assert next_prompt(CARD, text, covered={0, 1, 2}).kind == "harder"


def test_the_mock_asks_the_chosen_follow_up_and_keeps_why(db: Session, settings: Settings) -> None:
    mock = start(db, settings, make_user(db, guest_token="listen"))
    item = mocks.mock_items(session=db, mock=mock)[0]
    assert item.kind == "recall"
    mocks.answer(
        session=db, mock=mock, position=0, step="question", settings=settings, now=NOW, text="No idea."
    )
    db.refresh(item)
    asked = item.payload["follow_up"]
    assert asked["reason"].startswith("asked because")
    assert asked["kind"] in {"probe", "number", "follow_up"}  # nothing covered: never the harder one
    # The report says why it was asked.
    mocks.finish(session=db, mock=mock, now=NOW)
    report = mocks.build_report(session=db, mock=mock, catalog=catalog(), now=NOW)
    assert report.items[0].follow_up_reason == asked["reason"]
    assert report.items[0].follow_up_question == asked["question"]

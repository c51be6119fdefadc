"""app/services/mock/mistakes.py: a wrong figure gets a nudge naming it, a wrong or missed
multiple-choice option gets a probe on it; both built from the card's own data, and the mock
asks them and keeps why (the report's reason)."""

from __future__ import annotations

from dataclasses import replace

from sqlmodel import Session

from app.config import Settings
from app.services import mock as mocks
from app.services.card_content import FollowUp
from app.services.mock.interviewer import next_prompt
from app.services.mock.mistakes import choice_prompt, wrong_figure
from tests.services.factories import catalog, make_user
from tests.services.mock.helpers import NOW, start
from tests.services.mock.test_interviewer import CARD

OPTIONS = {
    "prompt": "Which are true?",
    "options": [
        {"text": "Keys and values", "correct": True, "why": None, "key_point": CARD.key_points[0]},
        {"text": "Not the queries", "correct": True, "why": None, "key_point": CARD.key_points[1]},
        {"text": "The attention scores", "correct": False, "why": "Scores depend on the new query."},
    ],
}


def test_a_wrong_figure_gets_a_nudge_naming_it() -> None:
    text = "Keys and values, never the queries: 256 KiB per token for Llama-2-7B."
    prompt = next_prompt(CARD, text, covered={0, 1})
    assert prompt.kind == "wrong_number" and prompt.probes == [2]
    assert prompt.question == (
        "You said 256 KiB per token; check how you got it. "
        "What goes in the blank: “Llama-2-7B keeps ___ KiB per token in fp16.”?"
    )
    assert prompt.answer == CARD.key_points[2]
    assert prompt.reason == "asked because you said 256 KiB per token where key point 3 has 512 KiB"
    assert next_prompt(CARD, text, covered={0, 1}) == prompt  # deterministic
    # Covered or not, a wrong figure is wrong: it comes before the harder question.
    assert next_prompt(CARD, text, covered={0, 1, 2}).kind == "wrong_number"


def test_the_card_figure_or_a_hedged_near_one_is_no_mistake() -> None:
    assert wrong_figure(CARD, "keys and values, 512 KiB per token") is None
    assert wrong_figure(CARD, "keys and values, 500 ms to fill") is None  # no time on the card
    assert next_prompt(CARD, "keys and values, never queries, 512 KiB", covered={0, 1, 2}).kind == "harder"


def test_the_other_prefix_asks_for_the_unit() -> None:
    prompt = wrong_figure(CARD, "It holds 512 KB per token.")
    assert prompt is not None and prompt.question.startswith(
        "You said 512 KB per token; check the unit: KB or KiB?"
    )


def test_a_missed_option_gets_the_follow_up_probing_its_key_point() -> None:
    prompt = choice_prompt(CARD, OPTIONS, [0, 2])
    assert prompt is not None and prompt.kind == "probe"
    assert (prompt.question, prompt.probes) == ("Why is the query not cached?", [1])
    assert (
        prompt.reason == "asked because you did not pick “Not the queries” and picked “The attention scores”"
    )
    # No follow-up probes that key point: the option itself is asked about.
    bare = replace(CARD, follow_ups=(FollowUp("Any?", "Anything.", (), "same"),))
    asked = choice_prompt(bare, OPTIONS, [0])
    assert asked is not None
    assert (asked.question, asked.answer) == (
        "You did not pick “Not the queries”. Why is it true?",
        CARD.key_points[1],
    )


def test_a_wrong_pick_with_every_right_one_is_asked_what_is_wrong_with_it() -> None:
    prompt = choice_prompt(CARD, OPTIONS, [0, 1, 2])
    assert prompt is not None and prompt.kind == "nudge"
    assert prompt.question == "You picked “The attention scores”. What is wrong with it?"
    assert prompt.answer == "Scores depend on the new query."
    assert "picked a wrong option" in prompt.reason
    assert choice_prompt(CARD, OPTIONS, [0, 1]) is None  # exactly right: the drawn follow-up stays


def test_the_mock_probes_the_option_a_pick_missed(db: Session, settings: Settings) -> None:
    mock = start(db, settings, make_user(db, guest_token="g"), minutes=20, topics=("kv-memory", "rope"))
    items = mocks.mock_items(session=db, mock=mock)
    choice = next(i for i in items if i.kind == "choice")
    for i in items[: choice.position]:
        for step in ("question", "follow_up"):
            mocks.answer(session=db, mock=mock, position=i.position, step=step, settings=settings, now=NOW)
    options = choice.payload["choice"]["options"]
    wrong = next(i for i, o in enumerate(options) if not o["correct"])
    missed = next(o for o in options if o["correct"])
    mocks.answer(session=db, mock=mock, position=choice.position, step="question", settings=settings,
                 now=NOW, picked=[wrong])  # fmt: skip
    db.refresh(choice)
    asked = choice.payload["follow_up"]
    assert asked["kind"] == "probe" and asked["reason"].startswith(
        f"asked because you did not pick “{missed['text']}”"
    )
    mocks.finish(session=db, mock=mock, now=NOW)
    report = mocks.build_report(session=db, mock=mock, catalog=catalog(), now=NOW)
    assert report.items[choice.position].follow_up_reason == asked["reason"]
    assert report.items[choice.position].follow_up_question == asked["question"]

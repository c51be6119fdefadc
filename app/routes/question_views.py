"""What a client sees of a question, in a quiz or a mock interview: one builder per view, each a
pydantic model the API answers and the page renders alike.

Both read the one payload shape `app/services/questions.build` writes for a question (a quiz item
stores it as its payload; a mock item stores it under the key of its kind, beside its follow-up).
A quiz item is answered flat (`prompt`, `options`, `units` at the top); the mock nests them under
`choice` and `numeric`: the JSON of each API is fixed, the reading of the payload is shared here.

A key a view leaves out stays absent from the JSON (the routes answer with
`response_model_exclude_unset=True`): a builder assigns only the keys the item's kind and state
show, and an assignment is what marks a field set.
"""

from __future__ import annotations

from typing import Any

from fsrs import Rating
from sqlmodel import Session

from app.content.catalog import Catalog
from app.enums import MockItemKind, MockPhase, QuestionKind, QuizItemState, RatingName
from app.models import Card, MockItem, QuizItem
from app.routes.challenge_models import submission_summary
from app.routes.mock.models import MockChallengeView, MockChoiceView, MockCurrent, MockNumericView
from app.routes.quiz.models import ChoiceOption, QuizCardRef, QuizItemPublic, QuizOption
from app.services import mock as mocks
from app.services import quiz as quizzes
from app.services.card_content import content
from app.services.cards import get_card
from app.services.scheduling import RATING_NAMES


def choice_options(question: dict[str, Any]) -> list[ChoiceOption]:
    """A multiple-choice question's options as asked: without which are right."""
    return [ChoiceOption(index=i, text=o["text"]) for i, o in enumerate(question["options"])]


def quiz_options(question: dict[str, Any], *, revealed: bool) -> list[QuizOption]:
    """The options of a quiz's question; once answered (`revealed`), which are right, and why."""
    options = []
    for i, o in enumerate(question["options"]):
        option = QuizOption(index=i, text=o["text"])
        if revealed:
            option.correct, option.why, option.key_point = o["correct"], o["why"], o.get("key_point")
        options.append(option)
    return options


def numeric_config(question: dict[str, Any]) -> dict[str, Any]:
    """The model's config.json values a numeric problem quotes ({} for one written before it had any)."""
    config: dict[str, Any] = question.get("config") or {}
    return config


def quiz_item_view(item: QuizItem, card: Card) -> QuizItemPublic:
    """What a client may see of a quiz question: the expected answer only once the user has answered."""
    state = quizzes.item_state(item)
    asked = content(card)
    view = QuizItemPublic(
        position=item.position,
        kind=item.kind,
        state=state,
        card=QuizCardRef(id=card.id, title=card.title, topic=card.topic, difficulty=card.difficulty),
        question=asked.question,
    )
    question = item.payload
    if item.kind == QuestionKind.CHOICE:
        view.prompt = question["prompt"]
        view.options = quiz_options(question, revealed=False)
    elif item.kind == QuestionKind.NUMERIC:
        view.prompt = question["prompt"]
        view.units = question["units"]
        view.config = numeric_config(question)
        view.tolerance = question["tolerance"]
        view.dimension = question["dimension"]
    if state == QuizItemState.OPEN:
        return view
    view.response = item.response
    view.correct = item.correct
    view.key_points = list(asked.key_points)
    if item.kind == QuestionKind.RECALL:
        view.suggested = item.suggested
    if item.kind == QuestionKind.CHOICE:
        view.options = quiz_options(question, revealed=True)
    elif item.kind == QuestionKind.NUMERIC:
        view.answer = question["answer"]
        view.answer_text = question["answer_text"]
        view.solution = question["solution"]
    if state == QuizItemState.RATED:
        view.rating = RatingName(RATING_NAMES[Rating(item.rating or 1)])
        view.due = item.due_after.isoformat() if item.due_after else None
    return view


def mock_question_view(
    *, session: Session, item: MockItem, catalog: Catalog, with_code: bool = True
) -> MockCurrent:
    """What the candidate sees of the mock question being asked: never the expected answer."""
    step = mocks.phase(item)
    view = MockCurrent(position=item.position, kind=item.kind, step=step)
    if item.kind == MockItemKind.CHALLENGE:
        challenge = catalog.challenge(item.challenge or "")
        view.challenge = MockChallengeView(
            slug=item.challenge,
            title=challenge.meta.title if challenge else item.challenge,
            prompt=challenge.prompt_body if challenge else "",
            entry_point=challenge.meta.entry_point if challenge else "",
            starter_code=challenge.starter if challenge and with_code else None,
        )
        submissions = mocks.challenge_submissions(session=session, item=item)
        view.submissions = [submission_summary(s) for s in submissions]
        return view
    assert item.card_id is not None  # every question but the coding problem asks a card
    card = get_card(session=session, card_id=item.card_id)
    assert card is not None
    if item.kind == MockItemKind.NUMERIC:
        problem = item.payload["numeric"]
        view.question = problem["prompt"]
        view.numeric = MockNumericView(
            units=problem["units"], unit=problem["unit"], config=numeric_config(problem)
        )
    else:
        view.question = card.data["question"]
    if item.kind == MockItemKind.CHOICE:
        choice = item.payload["choice"]
        view.choice = MockChoiceView(prompt=choice["prompt"], options=choice_options(choice))
    if step == MockPhase.FOLLOW_UP:
        view.answer = item.answer
        view.follow_up = item.payload["follow_up"]["question"]
        view.follow_up_kind = item.payload["follow_up"].get("kind")
    return view

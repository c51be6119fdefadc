"""Timed mock interviews, one module per concern:

- plan.py: the length into a number of questions, drawing the cards and the coding problem,
  freezing every question and starting the clock (`start_mock`);
- deadline.py: the server's clock, closing an interview at its deadline or when ended;
- interviews.py: reading interviews with ownership, where one stands;
- answers.py: answering each question and its follow-up in order, submitting code;
- scoring.py: the user's ticks, each question's score, feeding spaced repetition once;
- report.py: the report (safe for a shared link); sharing.py: its read-only link;
- rubric.py: the report's rubric, five signals rated 1-4 per answer with their evidence;
  corrections.py: the candidate's own ratings of it.

Asking a card (recall, multiple choice, a numeric problem that fits the card) is
app/services/questions.py, shared with the quiz; matching a common wrong answer is
app/services/wrong_answers.py. The routes use this package as `mocks`, by the names below.
"""

from app.services.mock.answers import answer, submit_code
from app.services.mock.corrections import correct_signal
from app.services.mock.deadline import close_if_due, ensure_running, finish, running_mock
from app.services.mock.interviews import (
    MOVED_ON,
    challenge_submissions,
    current_item,
    get_mock,
    history,
    mock_items,
    phase,
    remaining_seconds,
    status,
)
from app.services.mock.plan import (
    DIFFICULTIES,
    DIFFICULTY_RANK,
    LENGTHS,
    MockSpec,
    assign_kinds,
    build_payload,
    choose_challenge,
    draw_cards,
    one_question,
    plan_questions,
    select_cards,
    start_mock,
    topic_weights,
)
from app.services.mock.report import (
    ChallengeOutcome,
    ItemReport,
    Report,
    ReviewLink,
    TopicScore,
    build_report,
    challenge_outcome,
)
from app.services.mock.rubric import RATING_NAMES as RUBRIC_RATINGS
from app.services.mock.rubric import Answered, Rubric, SignalRating, WrongMatch
from app.services.mock.scoring import Mark, item_score, rating_for, score_mock
from app.services.mock.sharing import REVOKED, active_token, get_shared, revoke, share, was_revoked
from app.services.wrong_answers import bank_common_words, common_words, content_words, matches_wrong_answer

__all__ = [
    "DIFFICULTIES",
    "DIFFICULTY_RANK",
    "LENGTHS",
    "MOVED_ON",
    "REVOKED",
    "RUBRIC_RATINGS",
    "Answered",
    "ChallengeOutcome",
    "ItemReport",
    "Mark",
    "MockSpec",
    "Report",
    "ReviewLink",
    "Rubric",
    "SignalRating",
    "TopicScore",
    "WrongMatch",
    "active_token",
    "answer",
    "assign_kinds",
    "bank_common_words",
    "build_payload",
    "build_report",
    "challenge_outcome",
    "challenge_submissions",
    "choose_challenge",
    "close_if_due",
    "correct_signal",
    "common_words",
    "content_words",
    "current_item",
    "draw_cards",
    "ensure_running",
    "finish",
    "get_mock",
    "get_shared",
    "history",
    "item_score",
    "matches_wrong_answer",
    "mock_items",
    "one_question",
    "phase",
    "plan_questions",
    "rating_for",
    "remaining_seconds",
    "revoke",
    "running_mock",
    "score_mock",
    "select_cards",
    "share",
    "start_mock",
    "status",
    "submit_code",
    "topic_weights",
    "was_revoked",
]

"""The fixed vocabularies of the JSON API: statuses, phases and kinds, as StrEnums.

Their values are the strings the database stores and CONTRACT.md names: a StrEnum compares
equal to its value, so code that tests `status == "running"` keeps working, and the JSON
is unchanged. Here rather than in a service so that models, services and routes may all import
them (this module imports nothing of the app).
"""

from __future__ import annotations

import enum


# How a quiz question or a mock interview question is asked.
class QuestionKind(enum.StrEnum):
    RECALL = "recall"
    CHOICE = "choice"
    NUMERIC = "numeric"


# A mock interview item: a question, or the coding problem at the end.
class MockItemKind(enum.StrEnum):
    RECALL = "recall"
    CHOICE = "choice"
    NUMERIC = "numeric"
    CHALLENGE = "challenge"


# Where a quiz question is: waiting for an answer, answered (strong answer shown), rated.
class QuizItemState(enum.StrEnum):
    OPEN = "open"
    REVEALED = "revealed"
    RATED = "rated"


# How a quiz chose its cards.
class QuizMode(enum.StrEnum):
    TOPICS = "topics"
    DUE = "due"
    WEAKEST = "weakest"


# The four FSRS ratings by name.
class RatingName(enum.StrEnum):
    AGAIN = "again"
    HARD = "hard"
    GOOD = "good"
    EASY = "easy"


# A mock interview: the clock runs; it stopped (not scored yet); the user scored it.
class MockStatus(enum.StrEnum):
    RUNNING = "running"
    ENDED = "ended"
    SCORED = "scored"


# The step of the current mock question: its answer, its follow-up, or code for the problem.
class MockPhase(enum.StrEnum):
    QUESTION = "question"
    FOLLOW_UP = "follow_up"
    CODE = "code"


# Why a mock interview's clock stopped.
class MockEndedBy(enum.StrEnum):
    DEADLINE = "deadline"
    COMPLETED = "completed"
    USER = "user"


# A lab run (a run the worker stopped reporting on reads "failed").
class LabRunStatus(enum.StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


# One fit of a user's FSRS parameters (a fit the job stopped reporting on reads "failed").
class FitStatus(enum.StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


# How hard a card or a challenge is (the bank's `difficulty`, a quiz's and a mock's filter).
class Difficulty(enum.StrEnum):
    EASY = "easy"
    MEDIUM = "medium"
    HARD = "hard"


# How a card's follow-up stands to its key points: it probes one at the card's own level, or goes
# past them (asked when an answer covered every point).
class FollowUpDifficulty(enum.StrEnum):
    SAME = "same"
    HARDER = "harder"


# The signals a mock interview's rubric rates each answer on, 1 to 4 (app/services/mock/rubric.py).
class RubricSignal(enum.StrEnum):
    CORRECT = "correct"
    COMPLETE = "complete"
    QUANTITATIVE = "quantitative"
    TRADE_OFFS = "trade_offs"
    CLEAR = "clear"


# A graded submission.
class SubmissionStatus(enum.StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"


# What a review of a card came from: a quiz question of that kind, a solved coding problem, or a
# scored mock interview question.
class ReviewSource(enum.StrEnum):
    RECALL = "recall"
    CHOICE = "choice"
    NUMERIC = "numeric"
    CHALLENGE = "challenge"
    MOCK = "mock"

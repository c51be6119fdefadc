"""Spaced repetition with FSRS (the `fsrs` package): reviews, due dates, due counts and mastery.

One module per concern; every name is re-exported here, so `from app.services import scheduling`
and `scheduling.review_card(...)` keep working:

- scheduler: the user's FSRS scheduler, one review of one card, the rating buttons' previews;
- due: due counts and the due queue;
- mastery: how well cards and topics are held;
- history: graded challenges feeding the schedule, reviews per day, the streak.
"""

from app.services.scheduling.due import (
    DueCounts,
    due_counts,
    due_queue,
    introduced_today,
    live_cards,
    new_card_quota,
    study_order,
    topic_positions,
)
from app.services.scheduling.history import record_challenge_result, review_days, streak
from app.services.scheduling.mastery import (
    MASTERY_HORIZON,
    TopicMastery,
    card_mastery,
    mastery_by_topic,
    mastery_horizon_days,
    weakest_topics,
)
from app.services.scheduling.scheduler import (
    PROGRESS_FIELDS,
    RATING_NAMES,
    RATINGS_BY_NAME,
    SeededScheduler,
    days_to_interview,
    fuzz_seed,
    get_progress,
    humanize_interval,
    parameters_for,
    parse_rating,
    preview,
    preview_text,
    progress_snapshot,
    restore_progress,
    retention_for,
    review_card,
    review_cards,
    scheduler_for,
    start_of_day,
    to_fsrs,
)

__all__ = [
    "MASTERY_HORIZON",
    "PROGRESS_FIELDS",
    "RATINGS_BY_NAME",
    "RATING_NAMES",
    "DueCounts",
    "TopicMastery",
    "card_mastery",
    "days_to_interview",
    "due_counts",
    "due_queue",
    "get_progress",
    "humanize_interval",
    "introduced_today",
    "live_cards",
    "mastery_by_topic",
    "mastery_horizon_days",
    "new_card_quota",
    "parameters_for",
    "parse_rating",
    "SeededScheduler",
    "fuzz_seed",
    "preview",
    "preview_text",
    "progress_snapshot",
    "record_challenge_result",
    "restore_progress",
    "retention_for",
    "review_card",
    "review_cards",
    "review_days",
    "scheduler_for",
    "start_of_day",
    "streak",
    "study_order",
    "to_fsrs",
    "topic_positions",
    "weakest_topics",
]

"""The study settings form (retention target, interview date): what it shows, how it is checked, saving.

One checker for the settings page and the account page, so both say the same thing about the
same input and both keep what was typed when it is refused.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, timedelta

from sqlmodel import Session

from app.config import Settings
from app.models import User
from app.services.scheduling import retention_for

RETENTION_RANGE = (70, 99)  # percent; Settings.desired_retention's bounds
# Further ahead than this is a typo (the year 2062), not an interview.
LATEST_INTERVIEW = timedelta(days=5 * 366)


@dataclass
class StudyForm:
    """The form's fields as typed (strings), the values they mean, and what is wrong with them."""

    retention: str
    interview_date: str
    errors: dict[str, str] = field(default_factory=dict)
    retention_value: float | None = None  # None: the app's default
    interview_value: date | None = None


def study_form_for(user: User, settings: Settings) -> StudyForm:
    """The form filled in with what the user has now."""
    return StudyForm(
        retention=str(round(retention_for(user, settings) * 100)),
        interview_date=user.interview_date.isoformat() if user.interview_date else "",
        retention_value=user.desired_retention,
        interview_value=user.interview_date,
    )


def read_study_form(retention: str, interview_date: str, *, today: date) -> StudyForm:
    """Check what was typed; `errors` names each field that is wrong and says how to fix it."""
    form = StudyForm(retention=retention.strip(), interview_date=interview_date.strip())
    low, high = RETENTION_RANGE
    if form.retention:
        try:
            percent = float(form.retention)
        except ValueError:
            percent = -1.0
        if not low <= percent <= high:
            form.errors["retention"] = f"Choose a retention between {low}% and {high}%."
        else:
            form.retention_value = round(percent / 100, 4)
    if form.interview_date:
        try:
            day = date.fromisoformat(form.interview_date)
        except ValueError:
            form.errors["interview_date"] = "Use a date like 2026-12-24."
        else:
            if day < today:
                form.errors["interview_date"] = (
                    "That day has passed: choose today or a later day, or leave it empty."
                )
            elif day > today + LATEST_INTERVIEW:
                form.errors["interview_date"] = "Choose a day within the next five years."
            else:
                form.interview_value = day
    return form


def save_study_form(*, session: Session, user: User, form: StudyForm) -> None:
    """Store a form without errors. Commits."""
    assert not form.errors
    save_study_settings(
        session=session, user=user, retention=form.retention_value, interview_date=form.interview_value
    )


def save_study_settings(
    *, session: Session, user: User, retention: float | None, interview_date: date | None
) -> None:
    """Store the user's retention target and interview date (None: the defaults). Commits."""
    user.desired_retention = retention
    user.interview_date = interview_date
    session.add(user)
    session.commit()

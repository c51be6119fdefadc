"""One module per resource; each exposes `router` (its JSON API) and `pages` (its HTML) where it has them.

`ROUTERS` is every one of them in the order the app includes them: a path two routers could both
match goes to the first (a resource's pages come before its API).
"""

from fastapi import APIRouter

from app.routes import (
    account,
    anki,
    api_tokens,
    auth,
    calculator,
    cards,
    challenge_run,
    challenges,
    docs,
    home,
    key_points,
    lab,
    progress,
    submissions,
    topics,
)
from app.routes import settings as settings_routes
from app.routes.mock import api as mock_api
from app.routes.mock import pages as mock_pages
from app.routes.quiz import api as quiz_api
from app.routes.quiz import pages as quiz_pages
from app.routes.quiz import undo as quiz_undo

ROUTERS: tuple[APIRouter, ...] = (
    home.pages,
    docs.pages,
    topics.pages,
    cards.pages,
    cards.router,
    challenges.pages,
    challenges.router,
    submissions.router,
    challenge_run.router,
    auth.pages,
    auth.router,
    quiz_pages.pages,
    quiz_api.router,
    quiz_undo.pages,
    quiz_undo.router,
    settings_routes.pages,
    settings_routes.router,
    key_points.router,
    progress.pages,
    progress.router,
    account.pages,
    api_tokens.pages,
    account.router,
    anki.router,
    mock_pages.pages,
    mock_api.router,
    lab.pages,
    lab.router,
    calculator.pages,
    calculator.router,
)

"""Quizzes: `pages` (/quiz), `api` (/api/quizzes), `undo` (taking back a rating), with the request
models in `models` and the owner's quiz and item loaded in `views`."""

"""The mock setup page's counts read as words: "1 minute", "1 question", never "1 minutes"."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient

from app.main import create_app
from tests.services.factories import fast_settings


def _rule(db_url: str, **settings: object) -> str:
    with TestClient(create_app(fast_settings(db_url, **settings))) as client:
        page = client.get("/mock")
    assert page.status_code == 200
    found = re.search(r'id="plan-rule">(.*?)</p>', page.text, re.S)
    assert found, "no plan rule on the mock setup page"
    return re.sub(r"\s+", " ", found[1])


def test_one_of_each_is_singular(db_url: str) -> None:
    rule = _rule(db_url, mock_minutes_per_question=1.0, mock_challenge_minutes=1.0, mock_max_questions=1)
    assert rule.startswith("About 1 minute a question")
    assert "the coding problem takes 1 minute (at most half the time)" in rule
    assert rule.endswith("at most 1 question.")
    assert not re.search(r"\b1 (minutes|questions)\b", rule)


def test_the_defaults_say_their_units(db_url: str) -> None:
    rule = _rule(db_url)
    assert re.search(r"About \d+ minutes a question", rule)
    assert re.search(r"the coding problem takes \d+ minutes", rule)  # it said only the number
    assert re.search(r"at most \d+ questions\.$", rule)

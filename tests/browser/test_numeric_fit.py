"""A numeric-only quiz on one topic shows each problem under a card it belongs to (issue 15 item 2):
on the GQA topic, the memory problems are labelled with the GQA cache cards, never with the card
about uptraining a checkpoint. At a desktop width and at a phone's; screenshots in test-artifacts/.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from app.services import numeric
from tests.browser.conftest import WIDTHS, screenshot
from tests.browser.numeric_quiz import (
    answer_numeric_wrong_and_go_on,
    question_total,
    start_numeric_quiz,
)
from tests.services.factories import catalog

pytestmark = pytest.mark.browser

# What the two kinds declared for these cards ask: gqa_saving and kv_bytes_per_token.
ON_SUBJECT = re.compile(r"grouped-query attention|KV cache does one token take")


@pytest.mark.parametrize("width", list(WIDTHS))
def test_each_numeric_problem_is_labelled_with_a_card_it_fits(browser, live_server: str, width: str) -> None:  # type: ignore[no-untyped-def]
    topic = [c for c in catalog().bank.cards if c.topic == "mha-mqa-gqa"]
    fitting = {c.title for c in topic if numeric.kinds_for(c)}  # type: ignore[arg-type]
    assert fitting and "Converting a trained MHA checkpoint to GQA" not in fitting

    context, page = start_numeric_quiz(browser, live_server, width, topic="MHA, MQA and GQA", cards=5)
    total = question_total(page)
    assert total == len(fitting)  # one problem per fitting card; the short quiz says so
    expect(page.locator(".flash")).to_contain_text(f"This quiz has {total} question")
    labelled = []
    going_on = True
    while going_on:  # each miss may come back as a new problem: labelled with a fitting card too
        n = len(labelled) + 1
        expect(page.locator(".quiz-progress")).to_have_text(re.compile(rf"^Question {n} of \d+$"))
        expect(page.locator(".quiz-item")).to_have_attribute("data-kind", "numeric")
        label = page.get_by_text("A numeric problem for the card")
        expect(label).to_be_visible()
        title = re.search(r"“(.+)”", label.inner_text())
        assert title is not None and title[1] in fitting, label.inner_text()
        labelled.append(title[1])
        expect(page.locator("section.question")).to_have_text(ON_SUBJECT)
        if n == 1:
            screenshot(page, f"quiz-numeric-fit-{width}")
        going_on = answer_numeric_wrong_and_go_on(page)
    assert sorted(labelled[:total]) == sorted(fitting)
    context.close()

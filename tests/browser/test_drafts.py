"""Typed answers are never lost: a mock answer over the limit is refused in the page with the limit
and a live counter, and the text survives the refusal and a reload; the quiz's typed recall answer
survives a reload too. At a desktop width and at a phone's (390x844); screenshots in test-artifacts/.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from app.config import Settings
from tests.browser.conftest import WIDTHS, screenshot

pytestmark = pytest.mark.browser

TOPIC = "Why a decode step needs no mask"  # cards without numeric problems: spoken questions
LIMIT = Settings().mock_answer_max_chars


@pytest.fixture(params=list(WIDTHS))
def sized_page(request, browser, live_server: str):  # type: ignore[no-untyped-def]
    width, height = WIDTHS[request.param]
    phone = request.param == "phone"
    context = browser.new_context(
        base_url=live_server, viewport={"width": width, "height": height}, is_mobile=phone, has_touch=phone
    )
    page = context.new_page()
    page.set_default_timeout(15_000)
    yield page, request.param
    context.close()


def test_an_over_long_mock_answer_is_refused_and_kept(sized_page) -> None:  # type: ignore[no-untyped-def]
    page, width = sized_page
    page.goto("/mock")
    page.get_by_label("Custom", exact=True).check()
    page.get_by_label("Custom length in minutes").fill("20")
    page.get_by_label(TOPIC).check()
    page.get_by_label("Include a coding problem").uncheck()
    page.get_by_role("button", name="Start the interview").click()
    expect(page.locator(".mock-progress")).to_contain_text("Question 1 of")

    answer = page.get_by_label("Your answer")
    counter = page.locator("#answer-count")
    # The limit is stated before anything is typed.
    expect(counter).to_have_text(f"0 / {LIMIT:,} characters")
    # Paragraphs joined by newlines: the browser sends each as CR LF, which must not count twice.
    paragraph = "Every cached key is in the new query's past, so no mask is needed. " * 10
    long_text = "\n".join([paragraph.strip()] * (LIMIT // len(paragraph) + 2))
    assert len(long_text) > LIMIT
    answer.fill(long_text)
    expect(counter).to_have_text(f"{len(long_text):,} / {LIMIT:,} characters")
    expect(counter).to_have_class(re.compile("over"))
    page.get_by_role("button", name="Answer", exact=True).click()

    # Refused in the page: a message, the text still there, still the same question.
    expect(page.locator("#answer-error")).to_contain_text(f"{LIMIT:,}")
    expect(answer).to_have_value(long_text)
    expect(page.get_by_text("Interviewer, digging deeper:")).to_have_count(0)
    screenshot(page, f"mock-answer-over-limit-{width}")

    # A reload keeps it too.
    page.reload()
    expect(page.get_by_label("Your answer")).to_have_value(long_text)
    expect(counter).to_have_text(f"{len(long_text):,} / {LIMIT:,} characters")

    # Shortened under the limit (newlines included), it goes through to the follow-up.
    short = "\n".join(long_text.splitlines()[:3])
    page.get_by_label("Your answer").fill(short)
    expect(counter).not_to_have_class(re.compile("over"))
    page.get_by_role("button", name="Answer", exact=True).click()
    expect(page.get_by_text("Interviewer, digging deeper:")).to_be_visible()
    expect(page.locator(".typed-answer")).to_contain_text("no mask is needed")
    # The follow-up starts empty: the sent answer's draft does not come back in it.
    expect(page.get_by_label("Your answer")).to_have_value("")
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="End the interview").click()
    expect(page.get_by_role("heading", name="Score your answers")).to_be_visible()


def test_a_typed_recall_answer_survives_a_reload(sized_page) -> None:  # type: ignore[no-untyped-def]
    page, width = sized_page
    page.goto("/quiz")
    form = page.get_by_role("form", name="Start a quiz")
    form.get_by_label(TOPIC).check()
    form.get_by_label("Multiple choice").uncheck()
    form.get_by_label("Numeric problems").uncheck()
    form.get_by_label("Cards").fill("2")
    form.get_by_role("button", name="Start the quiz").click()
    expect(page.locator(".quiz-item")).to_have_attribute("data-kind", "recall")

    typed = f"One new query ({width}); all its keys are in the past."
    page.get_by_label(re.compile("Your answer")).fill(typed)
    page.reload()
    expect(page.get_by_label(re.compile("Your answer"))).to_have_value(typed)
    screenshot(page, f"quiz-recall-draft-{width}")
    page.get_by_role("button", name="Reveal the strong answer").click()
    expect(page.locator(".typed-answer")).to_contain_text(typed)
    page.get_by_role("button", name=re.compile("^Good")).click()
    # The next card's box starts empty: the answer sent for the first does not come back.
    expect(page.locator(".quiz-progress")).to_have_text("Question 2 of 2")
    expect(page.get_by_label(re.compile("Your answer"))).to_have_value("")

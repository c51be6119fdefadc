"""Sign up, take a 5-card quiz with every kind of question, rate it, log out and in: it is all still there."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import screenshot

pytestmark = pytest.mark.browser

EMAIL = "quiz-taker@example.com"
PASSWORD = "a long enough password"


def stat(page, name: str) -> int:  # type: ignore[no-untyped-def]
    return int(page.locator(f"#stat-{name}").inner_text())


def test_sign_up_quiz_rate_and_find_it_again(page) -> None:  # type: ignore[no-untyped-def]
    # Sign up.
    page.goto("/")
    page.get_by_role("link", name="Sign up").click()
    page.get_by_label("Email").fill(EMAIL)
    page.get_by_label("Password", exact=True).fill(PASSWORD)
    page.get_by_label("Password again").fill(PASSWORD)
    page.get_by_role("button", name="Create my account").click()
    expect(page.locator(".flash")).to_contain_text("Your account is ready")
    expect(page.locator(".account-email")).to_have_text(EMAIL)
    due_before = int(page.locator(".due-count").inner_text())
    assert due_before > 0  # today's new cards

    page.goto("/progress")
    assert stat(page, "reviews") == 0 and stat(page, "streak") == 0
    due_label = page.locator("#stat-due-today + .stat-label")
    expect(due_label).to_have_text(f"to study today (with {due_before} new)")

    # A 5-card quiz over two topics whose cards have numeric problems.
    page.get_by_role("link", name="Quiz", exact=True).click()
    form = page.get_by_role("form", name="Start a quiz")
    form.get_by_label("KV-cache memory arithmetic").check()
    form.get_by_label("MHA, MQA and GQA").check()
    form.get_by_label("Cards").fill("5")
    screenshot(page, "quiz-start")
    form.get_by_role("button", name="Start the quiz").click()

    # The five cards, then each miss (a wrong choice or number) once more at the end, asked afresh.
    kinds = []
    finished = page.get_by_role("heading", name="Quiz finished")
    n = 0
    while not finished.count():
        n += 1
        expect(page.locator(".quiz-progress")).to_have_text(re.compile(rf"^Question {n} of \d+$"))
        kind = page.locator(".quiz-item").get_attribute("data-kind")
        kinds.append(kind)
        if n > 5:
            expect(page.locator("#repeat-badge")).to_have_text("asked again, afresh: you missed it")
        if kind == "recall":
            page.get_by_label(re.compile("Your answer")).fill("Two tensors per layer, K and V, per KV head.")
            page.get_by_role("button", name="Reveal the strong answer").click()
            expect(page.locator(".typed-answer")).to_contain_text("K and V")
            page.locator(".tick-list input[type=checkbox]").first.check()
            screenshot(page, "quiz-recall-revealed")
            page.get_by_role("button", name=re.compile("^Good")).click()
            if not finished.count():
                expect(page.locator(".flash")).to_contain_text("Good, due again in")
            continue
        if kind == "choice":
            page.locator(".choices input[type=checkbox]").first.check()
            page.get_by_role("button", name="Check my answer").click()
            expect(page.locator("#rated")).to_contain_text("due again in")
            if page.locator(".choices li.opt-wrong.picked").count():
                expect(page.locator(".why").first).to_contain_text("Why it is wrong")
                expect(page.locator("#rated")).to_contain_text("Again")
            screenshot(page, "quiz-choice-answered")
        else:
            expect(page.locator(".model-config")).to_contain_text(re.compile("num_hidden_layers|n_layer"))
            page.get_by_label("Your answer").fill("0.000123")  # never right: counts are whole, memory is big
            page.get_by_role("button", name="Check", exact=True).click()
            expect(page.locator("#numeric-result")).to_contain_text("Not quite")
            expect(page.locator(".worked-solution")).to_have_attribute("open", "")
            expect(page.locator("#rated")).to_contain_text("Again")
            if n <= 5:  # a first miss comes back (a repeat's own miss may have no new problem left)
                expect(page.locator("#repeat-queued")).to_contain_text(
                    "at the end of this quiz, with a new problem"
                )
            screenshot(page, "quiz-numeric-wrong")
        page.locator("#next").click()
    assert "choice" in kinds and "numeric" in kinds and "recall" in kinds
    reviews = len(kinds)
    assert reviews > 5  # at least the numeric miss came back

    # The results show when each card is due again.
    expect(page.locator(".quiz-results tbody tr")).to_have_count(reviews)
    expect(page.locator(".quiz-results")).to_contain_text("(asked again)")
    for cell in page.locator(".due-cell").all_inner_texts():
        assert re.match(r"(in \d|now)", cell)
    screenshot(page, "quiz-results")

    # The dashboard changed.
    page.get_by_role("link", name="Your progress").click()
    assert stat(page, "reviews") == reviews and stat(page, "streak") == 1
    expect(page.locator(".history tbody tr")).to_have_count(min(reviews, 20))  # the 20 latest
    expect(page.locator(f'.heat-cell[data-count="{reviews}"]')).to_have_count(1)
    assert page.locator(".mastery-percent").filter(has_not_text=re.compile(r"^0%$")).count() >= 1
    # 5 introduced, due again soon
    expect(due_label).to_have_text(f"to study today (with {due_before - 5} new)")
    screenshot(page, "progress-dashboard")

    # Log out: a fresh guest sees none of it.
    page.get_by_role("button", name="Log out").click()
    expect(page.get_by_role("link", name="Log in")).to_be_visible()
    page.goto("/progress")
    assert stat(page, "reviews") == 0

    # Log in again: everything is still there.
    page.get_by_role("link", name="Log in").click()
    page.get_by_label("Email").fill(EMAIL)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page.locator(".flash")).to_contain_text("Welcome back")
    page.goto("/progress")
    assert stat(page, "reviews") == reviews and stat(page, "streak") == 1
    expect(page.locator(".history tbody tr")).to_have_count(min(reviews, 20))
    page.goto("/quiz")
    expect(page.locator(".card-item")).to_have_count(1)
    expect(page.locator(".card-item")).to_contain_text("finished")

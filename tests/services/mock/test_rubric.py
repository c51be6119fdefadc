"""app/services/mock/rubric.py: five signals rated 1-4 from what an answer said, with the evidence,
and the overall rule. The two hand-made answers rate differently on every pair of signals, so a
rater wired to the wrong signal fails."""

from __future__ import annotations

from sqlmodel import Session

from app.config import Settings
from app.services import mock as mocks
from app.services.mock.rubric import Answered, Rubric, WrongMatch, interview_overall, overall, rate
from tests.services.factories import catalog, make_user
from tests.services.mock.helpers import NOW, answer_all, start

POINTS = (
    "Keys and values of every past token, per layer and KV head.",
    "Queries are not stored: each is used once.",
    "Llama-2-7B keeps 512 KiB per token in fp16.",
    "The cache grows linearly with the sequence length.",
)
SIGNALS = ("correct", "complete", "quantitative", "trade_offs", "clear")


def recall(text: str, covered: set[int], follow_up: str = "", follow_up_covered: bool = False) -> Answered:
    return Answered("recall", text, follow_up, POINTS, covered, follow_up_covered)


def ratings(rubric: Rubric) -> dict[str, int | None]:
    return {s.signal: s.rating for s in rubric.signals}


def test_a_figure_without_the_main_point_rates_each_signal_on_its_own() -> None:
    rubric = rate(recall("Llama-2-7B needs 512 KiB per token, and it grows with the length.", {2}))
    assert ratings(rubric) == {"correct": 3, "complete": 2, "quantitative": 4, "trade_offs": 1, "clear": 4}
    by = {s.signal: s for s in rubric.signals}
    assert "Missed key point 1: “Keys and values of every past token" in by["correct"].evidence[-1]
    assert by["complete"].reason == "1 of 4 key points covered"
    assert by["complete"].evidence[2].startswith("Covered key point 3")
    assert by["quantitative"].evidence == ["You gave 512", "✓ key point 3's 512"]
    assert by["trade_offs"].evidence == ["Follow-up not covered", "No cost or alternative weighed"]
    # Correct counts twice: (2 x 3 + 2 + 4 + 1 + 4) / 6 = 2.8, rounded to 3.
    assert (rubric.overall, rubric.overall_name) == (3, "strong")


def test_a_hedged_answer_without_figures_that_weighs_the_cost() -> None:
    rubric = rate(
        recall(
            "Maybe keys and values, never the queries.",
            {0, 1, 3},
            follow_up="Per KV head, but GQA shares them across query heads.",
            follow_up_covered=True,
        )
    )
    assert ratings(rubric) == {"correct": 4, "complete": 3, "quantitative": 1, "trade_offs": 4, "clear": 3}
    by = {s.signal: s for s in rubric.signals}
    assert by["clear"].evidence == ["hedged: “maybe”"]
    assert (
        by["trade_offs"].evidence[1]
        == "Weighed a cost or an alternative: “Per KV head, but GQA shares them across”"
    )
    assert by["quantitative"].reason == "the strong answer has figures and yours gave none"


def test_the_two_answers_differ_on_every_pair_of_signals() -> None:
    a = ratings(rate(recall("Llama-2-7B needs 512 KiB per token, and it grows with the length.", {2})))
    b = ratings(
        rate(recall("Maybe keys and values, never the queries.", {0, 1, 3}, "Per KV head, but less.", True))
    )
    for i, s in enumerate(SIGNALS):
        for t in SIGNALS[i + 1 :]:
            assert (a[s], b[s]) != (a[t], b[t]), (s, t)


def test_an_echoed_wrong_answer_rates_correct_1_and_caps_the_overall() -> None:
    echo = WrongMatch(
        "It caches the attention scores.", "Scores depend on the new query.", ["attention", "score"], "answer"
    )
    text = "It caches keys, values and the attention scores, about 500 KiB a token, but never queries."
    answered = Answered("recall", text, "", POINTS, {0, 1, 2, 3}, True, [echo])
    rubric = rate(answered)
    by = {s.signal: s for s in rubric.signals}
    assert by["correct"].rating == 1
    assert by["correct"].evidence == [
        "Echoed a common wrong answer in your answer: “It caches the attention scores.” "
        "(matched on attention, score)"
    ]
    assert by["quantitative"].rating == 4  # 500 is within 5% of 512
    # (2 x 1 + 4 + 4 + 4 + 4) / 6 = 3, capped at 2 by the wrong claim.
    assert rubric.overall == 2
    # Echoed only in the follow-up answer: 2, not 1.
    in_follow_up = Answered(
        "recall", text, "scores", POINTS, {0}, False, [WrongMatch("x", "y", ["z"], "follow_up")]
    )
    assert ratings(rate(in_follow_up))["correct"] == 2


def test_a_checked_numeric_answer_rates_correct_and_quantitative_and_leaves_the_rest() -> None:
    right = rate(Answered("numeric", "13.4 GB", "", POINTS, set(), False, checked=True))
    assert ratings(right) == {
        "correct": 4,
        "complete": None,
        "quantitative": 4,
        "trade_offs": 1,
        "clear": None,
    }
    wrong = rate(
        Answered("numeric", "2 GB", "It is smaller, but slower.", POINTS, set(), True, checked=False)
    )
    assert ratings(wrong) == {"correct": 1, "complete": None, "quantitative": 2, "trade_offs": 4, "clear": 3}
    partly = rate(Answered("choice", "A; B", "", POINTS, set(), False, checked=False, partial=True))
    assert ratings(partly)["correct"] == 2 and ratings(partly)["quantitative"] is None


def test_no_answer_rates_1_where_a_rating_is_due() -> None:
    assert ratings(rate(recall("", set()))) == {
        "correct": 1,
        "complete": 1,
        "quantitative": 1,
        "trade_offs": 1,
        "clear": 1,
    }


def test_the_overall_rule() -> None:
    # A half rounds down: (2 x 2 + 3 + 3 + 2 + 3) / 6 = 2.5 -> 2; an unrated signal is left out.
    assert overall({"correct": 2, "complete": 3, "quantitative": 3, "trade_offs": 2, "clear": 3}) == 2
    assert (
        overall({"correct": 4, "complete": None, "quantitative": None, "trade_offs": 1, "clear": None}) == 3
    )
    assert overall({"correct": 1, "complete": 4, "quantitative": 4, "trade_offs": 4, "clear": 4}) == 2


def test_a_correction_counts_and_the_computed_rating_stays() -> None:
    answered = recall("Llama-2-7B needs 512 KiB per token, and it grows with the length.", {2})
    rubric = rate(answered, {"trade_offs": 4, "complete": 4, "clear": 4})
    by = {s.signal: s for s in rubric.signals}
    assert (by["trade_offs"].rating, by["trade_offs"].computed, by["trade_offs"].corrected) == (4, 1, True)
    assert by["clear"].corrected is False  # the same as computed: nothing corrected
    assert (rubric.overall, rubric.computed_overall) == (4, 3)  # (6 + 4 + 4 + 4 + 4) / 6 = 3.7
    # A signal the question gives nothing to rate on takes no correction.
    numeric = rate(Answered("numeric", "13 GB", "", POINTS, set(), False, checked=True), {"complete": 1})
    assert {s.signal: s.rating for s in numeric.signals}["complete"] is None


def test_the_report_carries_the_rubric_once_scored(db: Session, settings: Settings) -> None:
    user = make_user(db, guest_token="rubric")
    mock = start(db, settings, user)
    answer_all(db, settings, mock, every=20, text="I think keys and values, but not queries.")
    before = mocks.build_report(session=db, mock=mock, catalog=catalog(), now=NOW).to_json()
    assert all(item["rubric"] is None for item in before["items"]) and before["rubric_overall"] is None
    first = mocks.mock_items(session=db, mock=mock)[0]
    marks = {first.position: mocks.Mark((0,), True)}
    mocks.score_mock(session=db, user=user, mock=mock, marks=marks, settings=settings, now=NOW)
    report = mocks.build_report(session=db, mock=mock, catalog=catalog(), now=NOW)
    data = report.to_json()
    assert "score" in data and "covered" in data["items"][0]  # the fields that were there stay
    rubric = data["items"][0]["rubric"]
    assert [s["signal"] for s in rubric["signals"]] == list(SIGNALS)
    assert {s["signal"]: s["rating"] for s in rubric["signals"]}["trade_offs"] == 4  # covered, and "but"
    assert data["rubric_overall"] in {1, 2, 3, 4} and "Correct counted twice" in data["rubric_rule"]
    rated = [i["rubric"]["overall"] for i in data["items"] if i["rubric"]]
    assert data["rubric_overall"] == interview_overall(i.rubric for i in report.items if i.rubric)
    assert len(rated) == sum(1 for i in data["items"] if i["reached"] and i["kind"] != "challenge")


def test_a_citation_year_and_a_mask_value_are_no_figures() -> None:
    points = ("A new query sees keys 0 and 1 (Leviathan et al., 2023).", "The mask is 1 where it may attend.")
    answered = Answered("recall", "The query sees keys up to 2023 positions back.", "", points, {0}, False)
    by = {s.signal: s for s in rate(answered).signals}
    assert by["quantitative"].rating is None  # the strong answer has no figure to check

"""No two live cards ask the same question: two measures, each tried against the groups the review found.

1. Question text (WordLlama, app/services/key_point_matcher.py): a pair of live `## Question`s whose
   cosine similarity reaches THRESHOLD is a reworded copy.
2. Worked figures: a pair of live cards that declare SHARED_FIGURES or more of the same computed
   figures (front-matter `figures:` names) works one problem twice.

Why two, and why these values (measured on the bank of 2026-12-02, before the retirements, each of
the review's repeats taken as the retired card against the card it was retired into):

- No threshold on an embedding separates the review's groups from distinct cards. Over question
  texts the nine retired-vs-kept pairs score 0.34-0.56 with WordLlama while distinct live pairs
  reach 0.79 (at 0.50, 5 of the 9 are flagged and so are 207 distinct pairs of 8,515). Embedding
  the key points instead, or question and key points together, moves both sides up: the pairs
  score 0.62-0.84, distinct pairs up to 0.85 (at 0.70, 7 of 9 flagged with 146 distinct pairs).
  all-MiniLM-L6-v2 (the bench's other matcher) does no better: question texts 0.31-0.65 against
  0.81, key points 0.59-0.82 against 0.83. A hand-written TF-IDF over words and bigrams puts the
  pairs at 0.00-0.47 and distinct pairs (sampling cards that share one logit vector) at 0.64.
  The review's repeats ask one question in different words (a mask offset, a position offset and a
  cached-vs-full test are one bug hunt); cards on one topic share their words without repeating.
  So the embedding measure only catches rewordings: a reworded copy scores about 0.88 and the
  closest distinct live pair 0.79, and 0.83 sits between them.
- The numeric repeats do show in the figures: the 70B shape at 4k (seventy-b-8000-tokens against
  gqa-cache-for-a-70b-model) shares five computed figures, and so did two statements of the
  batch-1 decode floor (prefill-and-time-to-first-token against tokens-per-second-7b-h100, now
  trimmed to a link). Live pairs that legitimately reuse a step (the per-token cache, the weight
  bytes, one derived bound) share at most three: four or more is the same chain of arithmetic,
  and the card should link to the other instead.
- The conceptual groups (the long prompt arriving mid-decode, the identical-prefix rule, the bug
  hunt) are caught by neither; they are retired by hand with `superseded_by:`, and the last test
  holds each retired card's successor live. Two later pairs were retired the same way: the FP8
  formats asked twice (e4m3-e5m2-and-scales into quant-fp8-formats, 0.51 by question text, one
  shared value) and the naive loop's work counted twice (counting-the-work-a-cache-saves into
  long-prompt-without-a-cache, 0.79, then the closest live pair, under the threshold).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from app.content.loader import load_bank
from app.content.schema import Card
from app.services.key_point_matcher import WordLlamaEmbedder

THRESHOLD = 0.83
SHARED_FIGURES = 4
BANK = load_bank(Path(__file__).resolve().parents[2] / "questions")
BY_ID = {c.id: c for c in BANK.cards}


@pytest.fixture(scope="module")
def embedder() -> WordLlamaEmbedder:
    return WordLlamaEmbedder()


def _unit(vectors: np.ndarray) -> np.ndarray:
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def near_duplicates(embedder: WordLlamaEmbedder, questions: dict[str, str]) -> list[tuple[float, str, str]]:
    """(similarity, id, id) for every pair of questions at or above THRESHOLD, most similar first."""
    ids = list(questions)
    vectors = _unit(embedder.encode([questions[i] for i in ids]))
    sims = vectors @ vectors.T
    pairs = [
        (float(sims[a, b]), ids[a], ids[b])
        for a in range(len(ids))
        for b in range(a + 1, len(ids))
        if sims[a, b] >= THRESHOLD
    ]
    return sorted(pairs, reverse=True)


def builds_on(card: Card, other: Card) -> bool:
    """Whether `card`'s question starts from `other`'s result and says so with a link to it: a
    follow-on (a price list worked from a fleet plan) restates its inputs without repeating it."""
    return f"(/cards/{other.id})" in card.question


def shared_worked_figures(cards: list[Card]) -> list[tuple[int, str, str]]:
    """(count, id, id) for every pair of cards declaring SHARED_FIGURES or more of the same figures,
    unless one of the two links to the other from its question (builds_on)."""
    pairs = []
    for i, a in enumerate(cards):
        for b in cards[i + 1 :]:
            if builds_on(a, b) or builds_on(b, a):
                continue
            common = len(set(a.figures) & set(b.figures))
            if common >= SHARED_FIGURES:
                pairs.append((common, a.id, b.id))
    return sorted(pairs, reverse=True)


def test_no_two_live_cards_ask_the_same_question(embedder: WordLlamaEmbedder) -> None:
    live = {c.id: c.question for c in BANK.live_cards}
    assert len(live) >= 100
    found = near_duplicates(embedder, live)
    assert not found, "near-duplicate questions (retire one with superseded_by): " + "; ".join(
        f"{a} ~ {b} ({s:.2f})" for s, a, b in found
    )


def test_a_reworded_copy_of_a_card_is_flagged(embedder: WordLlamaEmbedder) -> None:
    live = {c.id: c.question for c in BANK.live_cards}
    live["new-card"] = (
        "At batch 1 on a single H100, how many tokens per second can a 7B model decode, and why? "
        "State the bound, the reasoning, and what you would expect to measure in practice."
    )
    live["verbatim-copy"] = live["what-the-cache-stores"]
    pairs = {(a, b) for _, a, b in near_duplicates(embedder, live)}
    assert ("tokens-per-second-7b-h100", "new-card") in pairs
    assert ("what-the-cache-stores", "verbatim-copy") in pairs
    assert len(pairs) == 2  # nothing else in the bank is caught with them


def test_a_distinct_question_on_the_same_topic_is_not_flagged(embedder: WordLlamaEmbedder) -> None:
    live = {c.id: c.question for c in BANK.live_cards}
    live["new-card"] = (
        "Why does a decode step on a 7B model get slower as its KV cache grows past 32,000 "
        "tokens, even at batch 1?"
    )
    assert not near_duplicates(embedder, live)


def test_no_two_live_cards_work_the_same_figures() -> None:
    found = shared_worked_figures(BANK.live_cards)
    message = "cards that work one problem twice (link to one, retire or trim the other): "
    assert not found, message + "; ".join(f"{a} ~ {b} ({n} figures)" for n, a, b in found)


def test_a_follow_on_that_links_its_source_is_not_a_repeat() -> None:
    """The price list restates the fleet plan's figures as its given and links that card; without
    the link the same pair is flagged."""
    fleet, price = BY_ID["gpus-from-qps-and-slos"], BY_ID["price-input-and-output-tokens"]
    assert builds_on(price, fleet)
    assert not shared_worked_figures([fleet, price])
    unlinked = price.model_copy(
        update={"question": price.question.replace("(/cards/gpus-from-qps-and-slos)", "")}
    )
    assert shared_worked_figures([fleet, unlinked]) == [(5, fleet.id, price.id)]


def test_the_retired_70b_card_would_be_flagged_by_its_figures() -> None:
    """The review's "70B shape at 4k" repeat, kept on disk as a retired card, is what the figure
    measure exists to catch: put back among the live cards, it is flagged against its successor."""
    retired = BY_ID["seventy-b-8000-tokens"]
    assert retired.superseded_by == "gqa-cache-for-a-70b-model"
    found = {(a, b) for _, a, b in shared_worked_figures([*BANK.live_cards, retired])}
    assert found == {("gqa-cache-for-a-70b-model", "seventy-b-8000-tokens")}


def test_every_retired_card_points_at_a_live_card_of_the_bank() -> None:
    live = {c.id for c in BANK.live_cards}
    retired = [c for c in BANK.cards if c.superseded_by is not None]
    assert len(retired) >= 9  # the review's groups, one retired card per repeat
    for card in retired:
        assert card.superseded_by in live, card.id

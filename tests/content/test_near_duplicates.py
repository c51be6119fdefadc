"""No two live cards ask nearly the same question (the offline matcher's embeddings, over question texts).

WordLlama (app/services/key_point_matcher.py) embeds each live card's `## Question`; a pair whose
cosine similarity reaches THRESHOLD is a repeat. Today's most similar live pair, two cards that
count a cache's savings on different prompts, scores 0.79; a light rewording of a card scores
about 0.88; so 0.83 separates related questions from a repeated one. A new card that repeats an
old one should instead supersede it (`superseded_by:` on the retired card).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from app.content.loader import load_bank
from app.services.key_point_matcher import WordLlamaEmbedder

THRESHOLD = 0.83
BANK = load_bank(Path(__file__).resolve().parents[2] / "questions")


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

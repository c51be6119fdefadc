"""The lab's experiments: the seeds' GPT-2 small measurements, rerun on this machine.

Each experiment reproduces one figure the cards quote from seed 000 (our GPT-2 small CPU
run) and reports it beside the seed's value. Timings take the median of `repeats` runs
after one warm-up, with torch on the thread count the runner set (one by default).

An experiment is a function `(model, plan, progress) -> dict` returning JSON-ready data:
`rows` for the table, `series` for the charts (x, y and the seed's points), and `checks`
for yes/no results (exactness, the position limit).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from graders.reference.gpt2 import GPT2, GPT2Config, LayerCache
from graders.wording import describe

# Seed 000's figures (GPT-2 small on a CPU): what each experiment is compared with.
SEED_PREFILL_MS: dict[int, float] = {16: 15.3, 960: 219.6}
SEED_POSITIONS = 1024
SEED: dict[str, Any] = {
    "prefill_ms": SEED_PREFILL_MS,
    "decode_step_ms": (8.0, 9.6),  # the range of a cached step across prompt lengths
    "decode_960_cached_ms": 9.6,
    "decode_960_uncached_ms": 228.8,
    "speedup_960": 24,
    "kib_per_token_fp32": 72,
    "positions": SEED_POSITIONS,
}

# What the page and the progress messages call each experiment (its key is for URLs and the API).
EXPERIMENT_NAMES: dict[str, str] = {
    "prefill": "prefill",
    "decode": "decode with and without the cache",
    "exactness": "exactness of the cache",
    "position_limit": "the position limit",
    "cache_bytes": "cache bytes",
    "batching": "batching",
}
SEED_RUN = "GPT-2 small, our CPU run"  # how the page names seed 000

Progress = Callable[[float, str], None]


@dataclass(frozen=True)
class Plan:
    """What to measure: the full plan reproduces the seed; a tiny one keeps tests fast."""

    prompt_lengths: tuple[int, ...] = (16, 64, 128, 256, 512, 768, 960)
    decode_lengths: tuple[int, ...] = (16, 128, 256, 512, 960)
    batch_sizes: tuple[int, ...] = (1, 2, 4, 8, 16)
    batch_context: int = 128
    exactness_prompt: int = 8
    exactness_new: int = 16
    repeats: int = 3
    seed: int = 0
    experiments: tuple[str, ...] = field(default=())  # empty: all of them

    def to_json(self) -> dict[str, Any]:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in self.__dict__.items()}


def median_ms(fn: Callable[[], object], repeats: int) -> float:
    """Median wall time of `repeats` calls of fn, in ms, after one warm-up call."""
    fn()  # warm-up: first calls pay for allocation and kernel selection
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def _tokens(model: GPT2, batch: int, length: int, seed: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    return torch.randint(0, model.config.vocab_size, (batch, length), generator=gen)  # (B, T)


def _seed_applies(model: GPT2) -> bool:
    """The seed's timings are GPT-2 small's: marking them beside a tiny model's would mislead."""
    return model.config == GPT2Config()


def _usable(lengths: tuple[int, ...], model: GPT2, extra: int = 1) -> list[int]:
    """Lengths that leave room for `extra` more positions in the model's table."""
    return [n for n in lengths if n + extra <= model.config.n_positions]


@torch.no_grad()
def prefill(model: GPT2, plan: Plan, progress: Progress) -> dict[str, Any]:
    """Prefill time against prompt length: many tokens in one parallel pass."""
    rows = []
    lengths = _usable(plan.prompt_lengths, model, extra=0)
    # No seed figure beside a tiny model's time: the seed timed GPT-2 small (the page says so).
    seed = SEED_PREFILL_MS if _seed_applies(model) else {}
    for i, n in enumerate(lengths):
        tokens = _tokens(model, 1, n, plan.seed)

        def run(tokens: torch.Tensor = tokens) -> object:
            return model(tokens)

        ms = median_ms(run, plan.repeats)
        rows.append({"prompt_tokens": n, "ms": round(ms, 2), "seed_ms": seed.get(n)})
        progress((i + 1) / len(lengths), f"prefill of {n} tokens: {ms:.1f} ms")
    seed_points = [[n, ms] for n, ms in SEED_PREFILL_MS.items()] if _seed_applies(model) else []
    return {
        "title": "Prefill time against prompt length",
        "rows": rows,
        "series": [{"label": "this machine", "points": [[r["prompt_tokens"], r["ms"]] for r in rows]}],
        "seed_points": seed_points,
        "x_label": "prompt tokens",
        "y_label": "ms",
    }


@torch.no_grad()
def decode(model: GPT2, plan: Plan, progress: Progress) -> dict[str, Any]:
    """One decode step's time against the cached length, with the cache and without it."""
    rows = []
    lengths = _usable(plan.decode_lengths, model)
    for i, n in enumerate(lengths):
        tokens = _tokens(model, 1, n + 1, plan.seed)
        prompt, nxt = tokens[:, :n], tokens[:, n:]
        _, cache = model(prompt)

        def cached(nxt: torch.Tensor = nxt, cache: list[LayerCache] = cache) -> object:
            return model(nxt, cache)  # attends over the n cached positions; the cache is not kept

        def uncached(tokens: torch.Tensor = tokens) -> object:
            return model(tokens)  # recomputes all n + 1 positions for one new row of logits

        with_cache = median_ms(cached, plan.repeats)
        without = median_ms(uncached, plan.repeats)
        rows.append(
            {
                "cached_tokens": n,
                "with_cache_ms": round(with_cache, 2),
                "without_cache_ms": round(without, 2),
                "speedup": round(without / with_cache, 1),
            }
        )
        progress((i + 1) / len(lengths), f"decode step after {n} tokens: {with_cache:.1f} ms cached")
    last = rows[-1] if rows else None
    return {
        "title": "A decode step against the cached length",
        "rows": rows,
        "series": [
            {"label": "with the cache", "points": [[r["cached_tokens"], r["with_cache_ms"]] for r in rows]},
            {"label": "without", "points": [[r["cached_tokens"], r["without_cache_ms"]] for r in rows]},
        ],
        "seed_points": (
            [[960, SEED["decode_960_cached_ms"]], [960, SEED["decode_960_uncached_ms"]]]
            if _seed_applies(model)
            else []
        ),
        "x_label": "cached tokens",
        "y_label": "ms per step",
        "speedup": {
            "cached_tokens": last["cached_tokens"] if last else None,
            "measured": last["speedup"] if last else None,
            "seed": SEED["speedup_960"],
        },
    }


@torch.no_grad()
def exactness(model: GPT2, plan: Plan, progress: Progress) -> dict[str, Any]:
    """Greedy tokens with and without the cache, token for token: the cache changes no output."""
    prompt = _tokens(model, 1, plan.exactness_prompt, plan.seed)
    with_cache = model.generate(prompt, plan.exactness_new, use_cache=True)[0].tolist()
    progress(0.5, "greedy decoding with the cache")
    without = model.generate(prompt, plan.exactness_new, use_cache=False)[0].tolist()
    progress(1.0, "greedy decoding without the cache")
    new_with, new_without = with_cache[plan.exactness_prompt :], without[plan.exactness_prompt :]
    return {
        "title": "Greedy output with and without the cache",
        "rows": [
            {"step": i + 1, "with_cache": a, "without_cache": b, "same": a == b}
            for i, (a, b) in enumerate(zip(new_with, new_without, strict=True))
        ],
        "checks": {"identical": new_with == new_without},
    }


@torch.no_grad()
def position_limit(model: GPT2, plan: Plan, progress: Progress) -> dict[str, Any]:
    """Fill the position table, then ask for one position more: it has no row."""
    n = model.config.n_positions
    tokens = _tokens(model, 1, n + 1, plan.seed)
    _, cache = model(tokens[:, :n])
    progress(0.5, f"prefilled all {n} positions")
    error = None
    try:
        model(tokens[:, n:], cache)
    except IndexError as exc:
        error = describe(exc)
    progress(1.0, f"token {n + 1} (position index {n})")
    # Counted as the cards count: token n + 1 (from 1) needs index n (from 0), one past the table.
    return {
        "title": f"Token {n + 1:,} needs position index {n:,}: the {n:,}-row table has none",
        "rows": [{"token": n + 1, "index": n, "error": error or "no error"}],
        "checks": {"raised_index_error": error is not None},
        "seed": (
            f"token {SEED_POSITIONS + 1:,} needs index {SEED_POSITIONS:,} and raised IndexError ({SEED_RUN})"
        ),
    }


@torch.no_grad()
def cache_bytes(model: GPT2, plan: Plan, progress: Progress) -> dict[str, Any]:
    """The cache's bytes as allocated, against the formula 2 x layers x heads x head size x 4 bytes."""
    rows = []
    lengths = _usable(plan.decode_lengths, model, extra=0)
    for i, n in enumerate(lengths):
        _, cache = model(_tokens(model, 1, n, plan.seed))
        measured = sum(t.numel() * t.element_size() for layer in cache for t in layer)
        formula = model.config.kv_bytes_per_token(4) * n
        rows.append(
            {
                "tokens": n,
                "measured_bytes": measured,
                "formula_bytes": formula,
                "kib_per_token": measured / n / 1024,
            }
        )
        progress((i + 1) / len(lengths), f"cache after {n} tokens: {measured / 2**20:.1f} MiB")
    return {
        "title": "Measured cache bytes against the formula",
        "rows": rows,
        "series": [
            {"label": "measured", "points": [[r["tokens"], r["measured_bytes"] / 2**20] for r in rows]}
        ],
        "x_label": "tokens",
        "y_label": "MiB",
        "checks": {"matches_formula": all(r["measured_bytes"] == r["formula_bytes"] for r in rows)},
        "seed": f"{SEED['kib_per_token_fp32']} KiB per token in fp32 ({SEED_RUN})",
    }


@torch.no_grad()
def batching(model: GPT2, plan: Plan, progress: Progress) -> dict[str, Any]:
    """Batch size against tokens per second (all users) and one user's time per token."""
    rows = []
    n = min(plan.batch_context, model.config.n_positions - 1)
    for i, b in enumerate(plan.batch_sizes):
        tokens = _tokens(model, b, n + 1, plan.seed)
        _, cache = model(tokens[:, :n])
        nxt = tokens[:, n:]

        def step(nxt: torch.Tensor = nxt, cache: list[LayerCache] = cache) -> object:
            return model(nxt, cache)

        ms = median_ms(step, plan.repeats)
        rows.append({"batch": b, "step_ms": round(ms, 2), "tokens_per_s": round(b * 1000 / ms, 1)})
        progress((i + 1) / len(plan.batch_sizes), f"batch {b}: {ms:.1f} ms a step")
    return {
        "title": "Batching: throughput against one user's latency",
        "rows": rows,
        "series": [
            {"label": "tokens/s (all users)", "points": [[r["batch"], r["tokens_per_s"]] for r in rows]},
            {
                "label": "ms per token (one user, right axis)",
                "points": [[r["batch"], r["step_ms"]] for r in rows],
                "axis": "right",
            },
        ],
        "x_label": "batch size",
        "x_integer": True,
        "y_label": "tokens/s (all users)",
        "y2_label": "ms per token (one user)",
        "cached_tokens": n,
    }


EXPERIMENTS: dict[str, Callable[[GPT2, Plan, Progress], dict[str, Any]]] = {
    "prefill": prefill,
    "decode": decode,
    "exactness": exactness,
    "position_limit": position_limit,
    "cache_bytes": cache_bytes,
    "batching": batching,
}

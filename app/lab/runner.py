"""Run a plan of lab experiments on one model, with progress, a thread count and a deadline.

Used in-process by `kvprep lab` and by the background job (app/lab/jobs.py), which runs it in
a child process of its own so that torch's threads and memory never touch the web server.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import torch

from app.lab.experiments import EXPERIMENT_NAMES, EXPERIMENTS, SEED, SEED_PREFILL_MS, Plan
from graders.reference.gpt2 import GPT2, GPT2Config

# A model small enough for a test or a first look (a few seconds), with the seed's ratios intact.
TINY_CONFIG = GPT2Config(n_layer=2, n_head=2, n_embd=64, n_positions=128, vocab_size=512)
TINY_PLAN = Plan(
    prompt_lengths=(8, 32, 96),
    decode_lengths=(8, 32, 96),
    batch_sizes=(1, 4),
    batch_context=32,
    exactness_prompt=4,
    exactness_new=6,
    repeats=1,
)
SIZES: dict[str, tuple[GPT2Config, Plan]] = {"full": (GPT2Config(), Plan()), "tiny": (TINY_CONFIG, TINY_PLAN)}
# What the pages call each size: the model, with the table size that sets its position limit.
SIZE_NAMES: dict[str, str] = {
    "full": f"GPT-2 small ({GPT2Config().n_positions:,} positions)",
    "tiny": f"a tiny model ({TINY_CONFIG.n_positions:,} positions)",
}


class LabTimeout(Exception):
    """The run went past its time limit; the experiments finished so far are kept."""


def run_plan(
    config: GPT2Config,
    plan: Plan,
    *,
    progress: Callable[[float, str], None] | None = None,
    threads: int = 1,
    time_limit_s: float = 600.0,
) -> dict[str, Any]:
    """Run every experiment of the plan (or those it names); returns JSON-ready results."""
    torch.set_num_threads(threads)
    names = list(plan.experiments or EXPERIMENTS)
    unknown = [n for n in names if n not in EXPERIMENTS]
    if unknown:
        raise ValueError(f"unknown experiment(s) {unknown}; known: {sorted(EXPERIMENTS)}")
    deadline = time.monotonic() + time_limit_s
    report = progress or (lambda fraction, message: None)

    model = GPT2(config, seed=plan.seed).eval()
    results: dict[str, Any] = {}
    for index, name in enumerate(names):

        def step(fraction: float, message: str, index: int = index, name: str = name) -> None:
            title = EXPERIMENT_NAMES[name]  # the page's name, not the key
            if time.monotonic() > deadline:
                raise LabTimeout(f"the lab stopped at its {time_limit_s:g} s limit during {title}")
            report((index + min(max(fraction, 0.0), 1.0)) / len(names), f"{title}: {message}")

        step(0.0, "starting")
        results[name] = EXPERIMENTS[name](model, plan, step)
    report(1.0, "done")
    return {
        "model": {
            "n_layer": config.n_layer,
            "n_head": config.n_head,
            "n_embd": config.n_embd,
            "n_positions": config.n_positions,
            "vocab_size": config.vocab_size,
            "parameters": sum(p.numel() for p in model.parameters()),
        },
        "plan": plan.to_json(),
        "threads": threads,
        "torch": torch.__version__,
        "seed_figures": {
            k: (list(v) if isinstance(v, tuple) else v) for k, v in SEED.items() if k != "prefill_ms"
        }
        | {"prefill_ms": {str(k): v for k, v in SEED["prefill_ms"].items()}},
        "experiments": results,
    }


def _seed_json() -> dict[str, Any]:
    """The seed's figures with JSON keys (prefill lengths as strings, ranges as lists)."""
    out = {k: list(v) if isinstance(v, tuple) else v for k, v in SEED.items() if k != "prefill_ms"}
    return out | {"prefill_ms": {str(k): v for k, v in SEED_PREFILL_MS.items()}}

"""Run cases of llama-block-decode: a prompt with cache=None, then single tokens on the returned cache."""

from __future__ import annotations

from typing import Any

import torch

from graders.checks.attention_common import submission_context
from graders.checks.llama_block_decode_variants import layer_variants
from graders.checks.report import Mismatch
from graders.examples.spec import SEED, Compared, Example, InvalidRunInput, Param, RunSpec, generator, randn
from graders.reference.llama import llama_block, random_weights
from graders.sandbox.protocol import SubmissionLink

ENTRY = "llama_block"


def _returned(value: Any, what: str) -> tuple[Any, Any]:
    """The submission's (y, cache); Mismatch naming what came back otherwise."""
    if isinstance(value, tuple | list) and len(value) == 2:
        return value[0], value[1]
    raise Mismatch(f"{what} returned {type(value).__name__}, expected a pair (y, cache)")


def _cached(cache: Any, key: str) -> Any:
    return cache.get(key) if isinstance(cache, dict) else cache


def _fits(values: dict[str, Any]) -> None:
    if values["hd"] % 2:
        raise InvalidRunInput(f"hd must be even: RoPE rotates pairs (got {values['hd']})", "hd")
    if values["n_heads"] % values["n_kv_heads"]:
        raise InvalidRunInput(
            f"n_kv_heads must divide n_heads ({values['n_heads']}): the layer raises ValueError otherwise",
            "n_kv_heads",
        )


def _llama_case(session: SubmissionLink, values: dict[str, Any]) -> list[Compared]:
    B, P, N, d = values["B"], values["prompt"], values["steps"], values["d"]
    H, H_kv, base, eps = values["n_heads"], values["n_kv_heads"], values["base"], values["eps"]
    gen = generator(values["seed"])
    weights = random_weights(gen, d, H, H_kv, values["hd"], values["f"])
    x = randn(gen, B, P + N, d) * values["scale"]
    w64 = {name: w.double() for name, w in weights.items()}
    want, want_cache = llama_block(x.double(), w64, H, H_kv, None, base, eps)
    with submission_context(f"calling llama_block on the prompt x {(B, P, d)}, cache=None"):
        y, cache = _returned(session.call(ENTRY, x[:, :P], weights, H, H_kv, None, base, eps), ENTRY)
    outs: dict[str, Any] = {}

    def on_prompt() -> dict[str, Any]:
        if not outs:
            outs.update(layer_variants(x[:, :P].double(), w64, H, H_kv, None, base, eps))
        return outs

    compared = [
        Compared(
            "y on the prompt (B, prompt, d)",
            y,
            want[:, :P].float(),
            variants=lambda: [((m,), out.y) for m, out in on_prompt().items()],
        ),
        Compared(
            "cache['k'] after the prompt, rotated (B, H_kv, prompt, hd)",
            _cached(cache, "k"),
            want_cache["k"][:, :, :P].float(),
            variants=lambda: [((m,), out.k) for m, out in on_prompt().items()],
        ),
        Compared(
            "cache['v'] after the prompt (B, H_kv, prompt, hd)",
            _cached(cache, "v"),
            want_cache["v"][:, :, :P].float(),
        ),
    ]
    decoded = []
    for i in range(P, P + N):
        with submission_context(f"calling llama_block on token {i} with the returned cache"):
            y, cache = _returned(
                session.call(ENTRY, x[:, i : i + 1], weights, H, H_kv, cache, base, eps), ENTRY
            )
        decoded.append(y)
    one_each = all(isinstance(t, torch.Tensor) and t.shape == (B, 1, d) for t in decoded)
    got = torch.cat(decoded, dim=1) if one_each else decoded[0] if N == 1 else decoded
    compared.append(
        Compared("y of the decode steps, one token each, stacked (B, steps, d)", got, want[:, P:].float())
    )
    return compared


def _example(name: str, **values: Any) -> Example:
    return Example(name, values)


LLAMA_BLOCK_DECODE = RunSpec(
    slug="llama-block-decode",
    entry_point=ENTRY,
    summary=(
        "Random weights of the contract's shapes; calls llama_block on a prompt (cache=None), then on one "
        "token at a time with the cache it returned, base and eps by position."
    ),
    params=(
        Param("B", "Batch B", 1, 1, 8),
        Param("prompt", "Prompt tokens", 5, 1, 32),
        Param("steps", "Decode steps", 2, 1, 16),
        Param("d", "Model width d", 12, 2, 128),
        Param("n_heads", "Query heads H", 4, 1, 16),
        Param("n_kv_heads", "KV heads H_kv", 2, 1, 16),
        Param("hd", "Head size hd (even)", 4, 2, 64),
        Param("f", "MLP width f", 20, 1, 256),
        Param("base", "RoPE base", 10000.0, 10.0, 1_000_000.0),
        Param("eps", "RMSNorm eps", 1e-5, 0.0, 1.0),
        Param("scale", "Input scale", 1.0, 0.001, 100.0, "multiplies x: small inputs show where eps goes"),
        SEED,
    ),
    examples=(
        _example(
            "one sequence, 4 query heads on 2 kv heads, H * hd != d",
            B=1,
            prompt=5,
            steps=2,
            d=12,
            n_heads=4,
            n_kv_heads=2,
            hd=4,
            f=20,
            base=10000.0,
            eps=1e-5,
            scale=1.0,
            seed=0,
        ),  # fmt: skip
        _example(
            "a batch of two, 6 heads on 3, another base",
            B=2,
            prompt=4,
            steps=3,
            d=20,
            n_heads=6,
            n_kv_heads=3,
            hd=6,
            f=36,
            base=500.0,
            eps=1e-5,
            scale=1.0,
            seed=1,
        ),  # fmt: skip
        _example(
            "small inputs where eps matters, multi-query (one kv head)",
            B=1,
            prompt=3,
            steps=2,
            d=16,
            n_heads=4,
            n_kv_heads=1,
            hd=8,
            f=24,
            base=10000.0,
            eps=0.002,
            scale=0.05,
            seed=2,
        ),  # fmt: skip
    ),
    case=_llama_case,
    rules=(_fits,),
)

__all__ = ["LLAMA_BLOCK_DECODE"]

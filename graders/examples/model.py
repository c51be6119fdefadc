"""Run cases of the model-side challenges: moe-routing, mla-decode."""

from __future__ import annotations

from typing import Any

import torch

from graders.checks.attention_common import submission_context
from graders.checks.mla_decode_variants import layer_variants
from graders.checks.report import Mismatch
from graders.examples.spec import (
    SEED,
    Compared,
    Example,
    InvalidRunInput,
    Param,
    RunSpec,
    at_most,
    generator,
    randn,
)
from graders.reference import moe
from graders.reference.mla import mla_attention, random_weights
from graders.sandbox.protocol import SubmissionLink


def _pair(value: Any) -> tuple[Any, Any]:
    """A submission's (weights, experts), or the value twice so that both comparisons say what it was."""
    if isinstance(value, tuple | list) and len(value) == 2:
        return value[0], value[1]
    return value, value


def _moe_case(session: SubmissionLink, values: dict[str, Any]) -> list[Compared]:
    T, d, f, E, top_k = values["tokens"], values["d"], values["f"], values["experts"], values["top_k"]
    renormalize, capacity = values["renormalize"], values["capacity"] or None
    gen = generator(values["seed"])
    x, w_router = randn(gen, T, d), randn(gen, d, E, scale=1.5 / d**0.5)
    w_gate, w_up = randn(gen, E, d, f, scale=d**-0.5), randn(gen, E, d, f, scale=d**-0.5)
    w_down = randn(gen, E, f, d, scale=f**-0.5)
    with submission_context(f"calling route(x {tuple(x.shape)}, w_router {tuple(w_router.shape)}, {top_k})"):
        got = session.call("route", x, w_router, top_k, renormalize=renormalize)
    weights, experts = _pair(got)
    want_w, want_e = moe.route(x, w_router, top_k, renormalize)
    out = [
        Compared(f"route's experts (T, top_k), renormalize={renormalize}", experts, want_e, exact=True),
        Compared("route's weights (T, top_k)", weights, want_w),
    ]
    args = (x, w_router, w_gate, w_up, w_down, top_k)
    with submission_context(f"calling moe_layer(x, ..., top_k={top_k}, capacity={capacity})"):
        y = session.call("moe_layer", *args, renormalize=renormalize, capacity=capacity)
    out.append(
        Compared(
            f"moe_layer's output (T, d), capacity={capacity}", y, moe.moe_layer(*args, renormalize, capacity)
        )
    )
    return out


MOE_ROUTING = RunSpec(
    slug="moe-routing",
    entry_point="route",
    also_calls=("moe_layer",),
    summary=(
        "Random tokens, router and SwiGLU experts; calls route(...) and moe_layer(...). capacity 0 means "
        "None (no capacity)."
    ),
    params=(
        Param("tokens", "Tokens T", 6, 1, 64),
        Param("d", "Model width d", 8, 1, 64),
        Param("f", "Expert width f", 16, 1, 128),
        Param("experts", "Experts E", 4, 1, 16),
        Param("top_k", "top_k", 2, 1, 16),
        Param("renormalize", "Renormalize the top-k weights", True),
        Param("capacity", "Capacity per expert", 0, 0, 64, "0: no capacity"),
        SEED,
    ),
    examples=(
        Example(
            "Mixtral-style: top 2 of 4, renormalised",
            {
                "tokens": 6,
                "d": 8,
                "f": 16,
                "experts": 4,
                "top_k": 2,
                "renormalize": True,
                "capacity": 0,
                "seed": 0,
            },
        ),
        Example(
            "DeepSeek-style: top 3 of 6, not renormalised",
            {
                "tokens": 5,
                "d": 8,
                "f": 12,
                "experts": 6,
                "top_k": 3,
                "renormalize": False,
                "capacity": 0,
                "seed": 1,
            },
        ),
        Example(
            "capacity 2: late tokens dropped",
            {
                "tokens": 8,
                "d": 6,
                "f": 8,
                "experts": 3,
                "top_k": 2,
                "renormalize": True,
                "capacity": 2,
                "seed": 2,
            },
        ),
    ),
    case=_moe_case,
    rules=(at_most("top_k", "experts"),),
)


def _layer_pair(value: Any, what: str) -> tuple[Any, Any]:
    if not isinstance(value, tuple | list) or len(value) != 2:
        raise Mismatch(f"{what} returned {type(value).__name__}, expected a pair (y, cache)")
    return value[0], value[1]


def _entry(cache: Any, key: str) -> Any:
    return cache.get(key) if isinstance(cache, dict) else cache


def _even_rope(values: dict[str, Any]) -> None:
    if values["d_rope"] % 2:
        raise InvalidRunInput(f"d_rope must be even: RoPE rotates pairs (got {values['d_rope']})", "d_rope")


def _mla_case(session: SubmissionLink, values: dict[str, Any]) -> list[Compared]:
    B, P, N, H, base = values["B"], values["prompt"], values["steps"], values["n_heads"], values["base"]
    gen = generator(values["seed"])
    sizes = (values["d"], H, values["d_nope"], values["d_rope"], values["d_c"], values["d_v"])
    weights = random_weights(gen, *sizes)
    x = randn(gen, B, P + N, values["d"])
    weights64 = {name: w.double() for name, w in weights.items()}
    want, want_cache = mla_attention(x.double(), weights64, H, None, base)
    with submission_context(f"calling mla_attention on the prompt x {(B, P, values['d'])}, cache=None"):
        y1, cache = _layer_pair(
            session.call("mla_attention", x[:, :P], weights, H, None, base), "mla_attention"
        )
    outs: dict[str, Any] = {}

    def prompt_variants() -> dict[str, Any]:
        if not outs:
            outs.update(layer_variants(x[:, :P].double(), weights64, H, None, base))
        return outs

    out = [
        Compared(
            "y on the prompt (B, prompt, d)",
            y1,
            want[:, :P].float(),
            variants=lambda: [((m,), o.y) for m, o in prompt_variants().items()],
        ),
        Compared(
            "cache['c'] after the prompt (B, prompt, d_c)", _entry(cache, "c"), want_cache["c"][:, :P].float()
        ),
        Compared(
            "cache['k_rope'] after the prompt, rotated (B, prompt, d_rope)",
            _entry(cache, "k_rope"),
            want_cache["k_rope"][:, :P].float(),
            variants=lambda: [((m,), o.k_rope) for m, o in prompt_variants().items()],
        ),
    ]
    steps = []
    for i in range(N):
        with submission_context(f"calling mla_attention on token {P + i} with the returned cache"):
            y, cache = _layer_pair(
                session.call("mla_attention", x[:, P + i : P + i + 1], weights, H, cache, base),
                "mla_attention",
            )
        steps.append(y)
    if all(isinstance(y, torch.Tensor) and y.shape == (B, 1, values["d"]) for y in steps):
        stacked: Any = torch.cat(steps, dim=1)
    else:
        stacked = steps[0] if len(steps) == 1 else steps
    out.append(
        Compared("y of the decode steps, one token each, stacked (B, steps, d)", stacked, want[:, P:].float())
    )
    return out


MLA_DECODE = RunSpec(
    slug="mla-decode",
    entry_point="mla_attention",
    summary=(
        "Random weights of the contract's shapes; calls mla_attention on a prompt (cache=None), then on "
        "one token at a time with the cache it returned."
    ),
    params=(
        Param("B", "Batch B", 1, 1, 8),
        Param("prompt", "Prompt tokens", 5, 1, 32),
        Param("steps", "Decode steps", 2, 1, 16),
        Param("d", "Model width d", 16, 2, 128),
        Param("n_heads", "Heads H", 2, 1, 16),
        Param("d_nope", "d_nope", 6, 1, 64),
        Param("d_rope", "d_rope (even)", 4, 2, 64),
        Param("d_c", "Latent width d_c", 8, 1, 128),
        Param("d_v", "d_v", 5, 1, 64),
        Param("base", "RoPE base", 10000.0, 10.0, 1_000_000.0),
        SEED,
    ),
    examples=(
        Example(
            "one sequence, two heads",
            {
                "B": 1,
                "prompt": 5,
                "steps": 2,
                "d": 16,
                "n_heads": 2,
                "d_nope": 6,
                "d_rope": 4,
                "d_c": 8,
                "d_v": 5,
                "base": 10000.0,
                "seed": 0,
            },
        ),  # fmt: skip
        Example(
            "a batch of two, three heads, another base",
            {
                "B": 2,
                "prompt": 4,
                "steps": 3,
                "d": 20,
                "n_heads": 3,
                "d_nope": 8,
                "d_rope": 6,
                "d_c": 10,
                "d_v": 7,
                "base": 500.0,
                "seed": 1,
            },
        ),  # fmt: skip
        Example(
            "a one-token prompt, a latent narrower than a head",
            {
                "B": 1,
                "prompt": 1,
                "steps": 3,
                "d": 12,
                "n_heads": 4,
                "d_nope": 10,
                "d_rope": 2,
                "d_c": 6,
                "d_v": 9,
                "base": 10000.0,
                "seed": 2,
            },
        ),  # fmt: skip
    ),
    case=_mla_case,
    rules=(_even_rope,),
)

__all__ = ["MLA_DECODE", "MOE_ROUTING"]

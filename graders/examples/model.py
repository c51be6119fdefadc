"""Run cases of the model-side challenges: moe-routing."""

from __future__ import annotations

from typing import Any

from graders.checks.attention_common import submission_context
from graders.examples.spec import SEED, Compared, Example, Param, RunSpec, at_most, generator, randn
from graders.reference import moe
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

__all__ = ["MOE_ROUTING"]

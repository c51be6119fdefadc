"""Run cases of int4-weight-matmul: quantize a random weight, dequantize it, multiply by it."""

from __future__ import annotations

from typing import Any

from graders.checks.attention_common import submission_context
from graders.examples.spec import (
    SEED,
    Compared,
    Example,
    InvalidRunInput,
    Param,
    RunSpec,
    divisible,
    generator,
    randn,
)
from graders.reference import int4
from graders.sandbox.protocol import SubmissionLink


def _triple(value: Any) -> tuple[Any, Any, Any]:
    """A submission's (packed, scales, zeros), or the value thrice: each comparison then says what it was."""
    if isinstance(value, tuple | list) and len(value) == 3:
        return value[0], value[1], value[2]
    return value, value, value


def _even_group(values: dict[str, Any]) -> None:
    if values["group_size"] % 2:
        raise InvalidRunInput(
            f"group_size must be even: two 4-bit codes share a byte (got {values['group_size']})",
            "group_size",
        )


def _int4_case(session: SubmissionLink, values: dict[str, Any]) -> list[Compared]:
    N, K, M, gs = values["N"], values["K"], values["M"], values["group_size"]
    gen = generator(values["seed"])
    w, x = randn(gen, N, K), randn(gen, M, K)
    with submission_context(f"calling quantize_int4(w {(N, K)}, group_size={gs})"):
        got = session.call("quantize_int4", w, gs)
    packed, scales, zeros = _triple(got)
    want_p, want_s, want_z = int4.quantize_int4(w, gs)
    out = [
        Compared("quantize_int4's packed (uint8) (N, K // 2)", packed, want_p, exact=True),
        Compared("quantize_int4's scales (N, K // group_size)", scales, want_s),
        Compared("quantize_int4's zeros (uint8) (N, K // group_size)", zeros, want_z, exact=True),
    ]
    # The reference's own format goes into the other two, so each is judged on its own.
    with submission_context("calling dequantize_int4(packed, scales, zeros, group_size)"):
        back = session.call("dequantize_int4", want_p, want_s, want_z, gs)
    out.append(
        Compared("dequantize_int4(...) (N, K)", back, int4.dequantize_int4(want_p, want_s, want_z, gs))
    )
    with submission_context(f"calling w4a16_matmul(x {(M, K)}, packed, scales, zeros, group_size)"):
        y = session.call("w4a16_matmul", x, want_p, want_s, want_z, gs)
    out.append(Compared("w4a16_matmul(x, ...) (M, N)", y, int4.w4a16_matmul(x, want_p, want_s, want_z, gs)))
    return out


INT4_WEIGHT_MATMUL = RunSpec(
    slug="int4-weight-matmul",
    entry_point="quantize_int4",
    also_calls=("dequantize_int4", "w4a16_matmul"),
    summary=(
        "A random weight w (N, K) and activations x (M, K); calls quantize_int4(w, group_size), then "
        "dequantize_int4 and w4a16_matmul on the reference's packed weight."
    ),
    params=(
        Param("N", "Output features N", 4, 1, 64),
        Param("K", "Input features K", 16, 2, 256),
        Param("group_size", "Group size (even, divides K)", 8, 2, 256),
        Param("M", "Rows of x, M", 2, 1, 16),
        SEED,
    ),
    examples=(
        Example("two groups per row", {"N": 4, "K": 16, "group_size": 8, "M": 2, "seed": 0}),
        Example("one group per row, one row of x", {"N": 3, "K": 8, "group_size": 8, "M": 1, "seed": 1}),
        Example("groups of two (one byte each)", {"N": 2, "K": 12, "group_size": 2, "M": 3, "seed": 2}),
    ),
    case=_int4_case,
    rules=(_even_group, divisible("K", "group_size")),
)

__all__ = ["INT4_WEIGHT_MATMUL"]

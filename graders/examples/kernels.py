"""Run cases of rope-cached-attention, left-padded-decoding, tiled-attention and int8-kv-cache."""

from __future__ import annotations

from typing import Any

import torch

from graders.checks.attention_common import decode_tensor, random_attention_weights, submission_context
from graders.checks.report import Mismatch
from graders.examples.attention import BATCH
from graders.examples.spec import (
    SEED,
    Compared,
    Example,
    Param,
    RunSpec,
    at_most,
    divisible,
    even_quotient,
    generator,
    randn,
)
from graders.reference import int8_cache
from graders.reference.padding import padded_attention_by_rows
from graders.reference.rope import apply_rope, rope_attention
from graders.reference.tiled import attention_with_lse
from graders.sandbox.protocol import SubmissionLink

HEADS = Param("n_heads", "Heads", 2, 1, 8)
D_MODEL = Param("d", "Model width d", 16, 2, 128, "n_heads times an even head size")
BASE = Param("base", "RoPE base", 10000.0, 10.0, 1_000_000.0)
ATTENTION_RULES = (divisible("d", "n_heads"), even_quotient("d", "n_heads", "the head size"))


def _pair(value: Any, what: str) -> tuple[Any, Any]:
    if not isinstance(value, tuple | list) or len(value) != 2:
        raise Mismatch(f"{what} returned {type(value).__name__}, expected a pair (y, cache)")
    return value[0], value[1]


def _rope_case(session: SubmissionLink, values: dict[str, Any]) -> list[Compared]:
    B, P, N, d, h, base = (
        values["B"],
        values["prompt"],
        values["new"],
        values["d"],
        values["n_heads"],
        values["base"],
    )
    gen = generator(values["seed"])
    hd = d // h
    heads = randn(gen, B, h, P, hd)
    positions = torch.arange(P)
    with submission_context(
        f"calling apply_rope(x, positions=arange({P}), base={base}) with x {tuple(heads.shape)}"
    ):
        rotated = session.call("apply_rope", heads, positions, base=base)
    out = [
        Compared(
            f"apply_rope(x, arange({P})) (B, H, T, hd)",
            rotated,
            apply_rope(heads.double(), positions, base).float(),
        )
    ]
    w_qkv, w_o = random_attention_weights(gen, d)
    x = randn(gen, B, P + N, d)
    with submission_context(f"calling rope_attention on the prompt x {(B, P, d)}, cache=None"):
        y1, cache = _pair(
            session.call("rope_attention", x[:, :P], w_qkv, w_o, h, None, base), "rope_attention"
        )
    with submission_context(f"calling rope_attention on {N} new tokens with the returned cache"):
        y2, cache2 = _pair(
            session.call("rope_attention", x[:, P:], w_qkv, w_o, h, cache, base), "rope_attention"
        )
    want, want_cache = rope_attention(x.double(), w_qkv.double(), w_o.double(), h, None, base)
    out.append(Compared("y on the prompt (B, prompt, d)", y1, want[:, :P].float()))
    out.append(Compared("y on the new tokens, with the cache (B, new, d)", y2, want[:, P:].float()))
    got_k = cache2.get("k") if isinstance(cache2, dict) else cache2
    out.append(
        Compared(
            "cache['k'] at the end, rotated (B, n_heads, prompt + new, hd)", got_k, want_cache["k"].float()
        )
    )
    return out


ROPE_CACHED_ATTENTION = RunSpec(
    slug="rope-cached-attention",
    entry_point="rope_attention",
    also_calls=("apply_rope",),
    summary=(
        "Calls apply_rope on random heads, then rope_attention on a prompt and on new tokens with "
        "the returned cache."
    ),
    params=(
        BATCH,
        Param("prompt", "Prompt tokens", 4, 1, 32),
        Param("new", "New tokens", 2, 1, 16),
        D_MODEL,
        HEADS,
        BASE,
        SEED,
    ),
    examples=(
        Example(
            "a prompt, then two tokens",
            {"B": 1, "prompt": 4, "new": 2, "d": 16, "n_heads": 2, "base": 10000.0, "seed": 0},
        ),
        Example(
            "a batch, another base",
            {"B": 2, "prompt": 5, "new": 1, "d": 24, "n_heads": 3, "base": 500.0, "seed": 1},
        ),
    ),
    case=_rope_case,
    rules=ATTENTION_RULES,
)


def _padding(values: dict[str, Any]) -> list[int]:
    """Left padding per row: row 0 none, the last row `pad`, the rows between in proportion."""
    B, pad = values["B"], values["pad"]
    return [round(b * pad / (B - 1)) if B > 1 else pad for b in range(B)]


def _padded_case(session: SubmissionLink, values: dict[str, Any]) -> list[Compared]:
    B, P, steps, d, h = values["B"], values["prompt"], values["steps"], values["d"], values["n_heads"]
    gen = generator(values["seed"])
    w_qkv, w_o = random_attention_weights(gen, d)
    x = randn(gen, B, P + steps, d)
    mask = torch.ones(B, P + steps, dtype=torch.long)
    for b, n in enumerate(_padding(values)):
        mask[b, :n] = 0
    want = padded_attention_by_rows(x.double(), w_qkv.double(), w_o.double(), h, mask).float()  # (B, S, d)
    real = mask.bool()[:, :, None]
    with submission_context(
        f"calling padded_attention on the prompt x {(B, P, d)}, attention_mask {mask[:, :P].tolist()}"
    ):
        y, cache = _pair(
            session.call("padded_attention", x[:, :P], w_qkv, w_o, h, mask[:, :P], None), "padded_attention"
        )
    y = decode_tensor(y, "y on the prompt")
    shown = y * real[:, :P] if y.shape == (B, P, d) else y  # padding positions may hold anything finite
    out = [Compared("y on the prompt at the real positions (B, prompt, d)", shown, want[:, :P])]
    ys = []
    for i in range(steps):
        s = P + i
        with submission_context(
            f"at decode step {i + 1}: x {(B, 1, d)}, attention_mask {tuple(mask[:, : s + 1].shape)}"
        ):
            y_step, cache = _pair(
                session.call("padded_attention", x[:, s : s + 1], w_qkv, w_o, h, mask[:, : s + 1], cache),
                "padded_attention",
            )
        ys.append(decode_tensor(y_step, f"decode step {i + 1}'s y"))
    if steps:
        got: Any = torch.cat(ys, dim=1) if all(t.shape == (B, 1, d) for t in ys) else ys[-1]
        out.append(Compared(f"y of the {steps} decode steps, stacked (B, steps, d)", got, want[:, P:]))
    return out


LEFT_PADDED_DECODING = RunSpec(
    slug="left-padded-decoding",
    entry_point="padded_attention",
    summary=(
        "A left-padded batch (row 0 unpadded, the last row `pad` padding tokens): padded_attention "
        "on the prompt, then `steps` decode steps with the returned cache; compared at the real "
        "positions."
    ),
    params=(
        Param("B", "Batch size B", 2, 1, 4),
        Param("prompt", "Prompt width", 5, 1, 24),
        Param("pad", "Padding of the last row", 2, 0, 23),
        Param("steps", "Decode steps", 2, 0, 8),
        D_MODEL,
        HEADS,
        SEED,
    ),
    examples=(
        Example(
            "two rows, one padded",
            {"B": 2, "prompt": 5, "pad": 2, "steps": 2, "d": 16, "n_heads": 2, "seed": 0},
        ),
        Example(
            "three rows, growing padding",
            {"B": 3, "prompt": 6, "pad": 4, "steps": 1, "d": 16, "n_heads": 4, "seed": 1},
        ),
    ),
    case=_padded_case,
    rules=(*ATTENTION_RULES, at_most("pad", "prompt", strictly=True, why="every row keeps a real token")),
)


def _tiled_case(session: SubmissionLink, values: dict[str, Any]) -> list[Compared]:
    B, H, Tq, Tk, hd, block, causal = (
        values[k] for k in ("B", "H", "Tq", "Tk", "hd", "block_size", "causal")
    )
    gen = generator(values["seed"])
    q, k, v = randn(gen, B, H, Tq, hd), randn(gen, B, H, Tk, hd), randn(gen, B, H, Tk, hd)
    with submission_context(f"calling tiled_attention(q, k, v, block_size={block}, causal={causal})"):
        got = session.call("tiled_attention", q, k, v, block, causal=causal)
    want, _ = attention_with_lse(q.double(), k.double(), v.double(), causal)
    out = [
        Compared(
            f"tiled_attention(..., block_size={block}, causal={causal}) (B, H, Tq, hd)", got, want.float()
        )
    ]
    if Tk >= 2:
        s = Tk // 2
        o1, l1 = attention_with_lse(q, k[:, :, :s], v[:, :, :s])
        o2, l2 = attention_with_lse(q, k[:, :, s:], v[:, :, s:])
        with submission_context(f"calling merge_attention on keys 0..{s - 1} and {s}..{Tk - 1} (no mask)"):
            merged = session.call("merge_attention", o1, l1, o2, l2)
        o_all, l_all = attention_with_lse(q.double(), k.double(), v.double())
        pair = merged if isinstance(merged, tuple | list) and len(merged) == 2 else (merged, None)
        out.append(
            Compared(f"merge_attention's o over keys 0..{s - 1} and {s}..{Tk - 1}", pair[0], o_all.float())
        )
        out.append(Compared("merge_attention's lse (B, H, Tq)", pair[1], l_all.float()))
    return out


TILED_ATTENTION = RunSpec(
    slug="tiled-attention",
    entry_point="tiled_attention",
    also_calls=("merge_attention",),
    summary=(
        "Random q, k, v; calls tiled_attention(q, k, v, block_size, causal) and merge_attention on "
        "two halves of the keys."
    ),
    params=(
        Param("B", "Batch size B", 1, 1, 4),
        Param("H", "Heads H", 2, 1, 8),
        Param("Tq", "Queries Tq", 3, 1, 64),
        Param("Tk", "Keys Tk", 7, 1, 128),
        Param("hd", "Head size", 4, 1, 64),
        Param("block_size", "Block size", 3, 1, 128),
        Param("causal", "Causal", False),
        SEED,
    ),
    examples=(
        Example(
            "blocks that do not divide Tk",
            {"B": 1, "H": 2, "Tq": 3, "Tk": 7, "hd": 4, "block_size": 3, "causal": False, "seed": 0},
        ),
        Example(
            "causal, bottom-right",
            {"B": 2, "H": 1, "Tq": 4, "Tk": 9, "hd": 8, "block_size": 2, "causal": True, "seed": 1},
        ),
    ),
    case=_tiled_case,
    rules=(at_most("Tq", "Tk", when="causal"),),
)


def _int8_case(session: SubmissionLink, values: dict[str, Any]) -> list[Compared]:
    B, H, T, hd = values["B"], values["H"], values["T"], values["hd"]
    gen = generator(values["seed"])
    x = randn(gen, B, H, T, hd, scale=values["magnitude"])
    if values["zero_row"]:
        x[0, 0, 0] = 0.0
    with submission_context(f"calling quantize_kv(x) with x {tuple(x.shape)}"):
        got = session.call("quantize_kv", x)
    want_q, want_scale = int8_cache.quantize_kv(x)
    pair = got if isinstance(got, tuple | list) and len(got) == 2 else (got, None)
    out = [
        Compared("quantize_kv's q (int8)", pair[0], want_q, exact=True),
        Compared("quantize_kv's scale (B, H, T, 1)", pair[1], want_scale),
    ]
    with submission_context("calling dequantize_kv(q, scale) on the reference's q and scale"):
        back = session.call("dequantize_kv", want_q, want_scale)
    out.append(Compared("dequantize_kv(q, scale)", back, int8_cache.dequantize_kv(want_q, want_scale)))
    query = randn(gen, B, H, 1, hd)
    v = randn(gen, B, H, T, hd, scale=values["magnitude"])
    v_q, v_scale = int8_cache.quantize_kv(v)
    with submission_context("calling int8_attention(q, k_q, k_scale, v_q, v_scale)"):
        att = session.call("int8_attention", query, want_q, want_scale, v_q, v_scale)
    want_att = int8_cache.int8_attention(query.double(), want_q, want_scale.double(), v_q, v_scale.double())
    out.append(Compared("int8_attention(...) (B, H, 1, hd)", att, want_att.float()))
    return out


INT8_KV_CACHE = RunSpec(
    slug="int8-kv-cache",
    entry_point="quantize_kv",
    also_calls=("dequantize_kv", "int8_attention"),
    summary=(
        "Quantizes random x with quantize_kv, dequantizes the reference's q and scale, and runs "
        "int8_attention over a quantized cache."
    ),
    params=(
        Param("B", "Batch size B", 1, 1, 4),
        Param("H", "Heads H", 2, 1, 8),
        Param("T", "Positions T", 3, 1, 64),
        Param("hd", "Head size", 4, 1, 64),
        Param("magnitude", "Magnitude of x", 1.0, 0.001, 1000.0),
        Param("zero_row", "One row of zeros", False, help="x[0, 0, 0] is all zeros: its scale must be 1.0"),
        SEED,
    ),
    examples=(
        Example(
            "small values",
            {"B": 1, "H": 2, "T": 3, "hd": 4, "magnitude": 1.0, "zero_row": False, "seed": 0},
        ),
        Example(
            "a row of zeros",
            {"B": 2, "H": 1, "T": 4, "hd": 8, "magnitude": 5.0, "zero_row": True, "seed": 1},
        ),
    ),
    case=_int8_case,
)

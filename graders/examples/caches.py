"""Run cases of the cache-object challenges: kv-cache-buffer, sliding-window-cache, paged-kv-cache.

Each case drives the submission's object and a reference object with the same calls, then
compares what the calls returned. The object itself stays in the submission's process.
"""

from __future__ import annotations

from typing import Any

import torch

from graders.checks.attention_common import submission_context
from graders.examples.spec import SEED, Compared, Example, InvalidRunInput, Param, RunSpec, generator, randn
from graders.reference.kv_cache import KVCache
from graders.reference.paged_cache import PagedKVCache, blocks_for, paged_attention
from graders.reference.sliding_window import SlidingWindowCache
from graders.sandbox.protocol import SubmissionLink

BATCH = Param("batch", "Batch", 2, 1, 4)
HEADS = Param("n_heads", "Heads", 2, 1, 8)
HEAD_DIM = Param("head_dim", "Head size", 4, 1, 32)


def _kv(gen: torch.Generator, B: int, H: int, n: int, hd: int) -> tuple[torch.Tensor, torch.Tensor]:
    return randn(gen, B, H, n, hd), randn(gen, B, H, n, hd)


def _buffer_case(session: SubmissionLink, values: dict[str, Any]) -> list[Compared]:
    B, H, hd, max_len = values["batch"], values["n_heads"], values["head_dim"], values["max_len"]
    prompt, steps = values["prompt"], values["steps"]
    gen = generator(values["seed"])
    with submission_context(f"while building KVCache(2, {B}, {H}, {max_len}, {hd})"):
        cache = session.call("KVCache", 2, B, H, max_len, hd, keep=True)
    ref = KVCache(2, B, H, max_len, hd)
    start, got = 0, None
    for n in [prompt] + [1] * steps:
        k, v = _kv(gen, B, H, n, hd)
        with submission_context(f"calling update(1, k, v, start={start}) with k {tuple(k.shape)}"):
            got = session.call(cache.update, 1, k, v, start)
        want = tuple(t.clone() for t in ref.update(1, k, v, start))  # views: the reorder moves them
        start += n
    beam_idx = torch.randperm(B, generator=gen)
    with submission_context(f"calling reorder(beam_idx={beam_idx.tolist()})"):
        session.call(cache.reorder, beam_idx)
    ref.reorder(beam_idx)
    k, v = _kv(gen, B, H, 1, hd)
    with submission_context(f"calling update(1, k, v, start={start}) after the reorder"):
        after = session.call(cache.update, 1, k, v, start)
    want_after = tuple(t.clone() for t in ref.update(1, k, v, start))
    pair = got if isinstance(got, tuple | list) and len(got) == 2 else (got, None)
    pair_after = after if isinstance(after, tuple | list) and len(after) == 2 else (after, None)
    return [
        Compared(f"k_all after the prompt and {_steps(steps)} (B, H, {start}, hd)", pair[0], want[0]),
        Compared(f"v_all after the prompt and {_steps(steps)} (B, H, {start}, hd)", pair[1], want[1]),
        Compared(f"k_all after reorder({beam_idx.tolist()}) and one more step", pair_after[0], want_after[0]),
        Compared(f"v_all after reorder({beam_idx.tolist()}) and one more step", pair_after[1], want_after[1]),
    ]


def _steps(n: int) -> str:
    return f"{n} step" if n == 1 else f"{n} steps"


def _fits_buffer(values: dict[str, Any]) -> None:
    if values["prompt"] + values["steps"] + 1 > values["max_len"]:
        raise InvalidRunInput(
            f"max_len must hold the prompt, the steps and one more token "
            f"({values['prompt']} + {values['steps']} + 1)",
            "max_len",
        )


KV_CACHE_BUFFER = RunSpec(
    slug="kv-cache-buffer",
    entry_point="KVCache",
    summary=(
        "Builds KVCache(2, batch, n_heads, max_len, head_dim), writes a prompt then single tokens "
        "into layer 1, reorders the batch rows, writes one more token; compares what update "
        "returned."
    ),
    params=(
        BATCH,
        HEADS,
        HEAD_DIM,
        Param("max_len", "max_len", 8, 2, 64),
        Param("prompt", "Prompt tokens", 3, 1, 32),
        Param("steps", "Single-token updates", 2, 0, 16),
        SEED,
    ),
    examples=(
        Example(
            "a prompt and two steps",
            {"batch": 2, "n_heads": 2, "head_dim": 4, "max_len": 8, "prompt": 3, "steps": 2, "seed": 0},
        ),
        Example(
            "filled to max_len",
            {"batch": 3, "n_heads": 1, "head_dim": 2, "max_len": 6, "prompt": 4, "steps": 1, "seed": 1},
        ),
    ),
    case=_buffer_case,
    rules=(_fits_buffer,),
)


def _window_case(session: SubmissionLink, values: dict[str, Any]) -> list[Compared]:
    window, n_sink, B, H, hd = (
        values["window"],
        values["n_sink"],
        values["batch"],
        values["n_heads"],
        values["head_dim"],
    )
    gen = generator(values["seed"])
    with submission_context(f"while building SlidingWindowCache({window}, {n_sink}, {B}, {H}, {hd})"):
        cache = session.call("SlidingWindowCache", window, n_sink, B, H, hd, keep=True)
    ref = SlidingWindowCache(window, n_sink, B, H, hd)
    seen, got = 0, None
    for n in [values["prompt"]] + [1] * values["steps"]:
        k, v = _kv(gen, B, H, n, hd)
        with submission_context(f"calling update(k, v) with k {tuple(k.shape)} after {seen} tokens"):
            got = session.call(cache.update, k, v)
        want = ref.update(k, v)
        seen += n
    triple = got if isinstance(got, tuple | list) and len(got) == 3 else (got, None, None)
    return [
        Compared(f"kept keys after {seen} tokens (B, H, K, hd)", triple[0], want[0].clone()),
        Compared(f"kept values after {seen} tokens", triple[1], want[1].clone()),
        Compared("positions of the kept tokens", triple[2], want[2].clone(), exact=True),
    ]


SLIDING_WINDOW_CACHE = RunSpec(
    slug="sliding-window-cache",
    entry_point="SlidingWindowCache",
    summary=(
        "Builds SlidingWindowCache(window, n_sink, batch, n_heads, head_dim), feeds a prompt then "
        "single tokens, and compares the last update's kept keys, values and positions."
    ),
    params=(
        Param("window", "Window", 4, 1, 32),
        Param("n_sink", "Sink tokens", 1, 0, 8),
        BATCH,
        HEADS,
        HEAD_DIM,
        Param("prompt", "Prompt tokens", 6, 1, 48),
        Param("steps", "Single-token updates", 3, 0, 32),
        SEED,
    ),
    examples=(
        Example(
            "rolling buffer, no sinks",
            {
                "window": 4,
                "n_sink": 0,
                "batch": 1,
                "n_heads": 2,
                "head_dim": 4,
                "prompt": 3,
                "steps": 4,
                "seed": 0,
            },
        ),
        Example(
            "two attention sinks",
            {
                "window": 3,
                "n_sink": 2,
                "batch": 2,
                "n_heads": 1,
                "head_dim": 2,
                "prompt": 4,
                "steps": 3,
                "seed": 1,
            },
        ),
        Example(
            "a prompt longer than the window",
            {
                "window": 2,
                "n_sink": 1,
                "batch": 1,
                "n_heads": 1,
                "head_dim": 4,
                "prompt": 7,
                "steps": 1,
                "seed": 2,
            },
        ),
    ),
    case=_window_case,
)


def _paged_case(session: SubmissionLink, values: dict[str, Any]) -> list[Compared]:
    n_blocks, bs, H, hd = values["n_blocks"], values["block_size"], values["n_heads"], values["head_dim"]
    gen = generator(values["seed"])
    with submission_context(f"while building PagedKVCache({n_blocks}, {bs}, {H}, {hd})"):
        cache = session.call("PagedKVCache", n_blocks, bs, H, hd, keep=True)
    ref = PagedKVCache(n_blocks, bs, H, hd)

    def append(seq: int, n: int) -> None:
        k, v = randn(gen, H, n, hd), randn(gen, H, n, hd)
        with submission_context(f"calling append({seq}, k, v) with k {tuple(k.shape)}"):
            session.call(cache.append, seq, k, v, memory_error_is_data=True)
        ref.append(seq, k, v)

    append(0, values["len_a"])
    append(1, values["len_b"])
    with submission_context("calling fork(0, 2)"):
        session.call(cache.fork, 0, 2)
    ref.fork(0, 2)
    append(2, 1)
    append(0, 1)
    out: list[Compared] = []
    for seq in (0, 2):
        with submission_context(f"calling gather({seq})"):
            got = session.call(cache.gather, seq)
        k = got[0] if isinstance(got, tuple | list) and len(got) == 2 else got
        what = (
            "sequence 0 after the fork and one more token"
            if seq == 0
            else "its fork (sequence 2), one token of its own"
        )
        out.append(Compared(f"gathered keys of {what} (H, L, hd)", k, ref.gather(seq)[0].clone()))
    q = randn(gen, 3, H, 1, hd)
    with submission_context("calling paged_attention(q, cache, [0, 1, 2])"):
        got_attention = session.call("paged_attention", q, cache, [0, 1, 2])
    out.append(
        Compared(
            "paged_attention over sequences [0, 1, 2] (3, H, 1, hd)",
            got_attention,
            paged_attention(q.double(), _as_double(ref), [0, 1, 2]).float(),
        )
    )
    with submission_context("calling num_free_blocks()"):
        free = session.call(cache.num_free_blocks)
    out.append(Compared("num_free_blocks() at the end", free, ref.num_free_blocks(), exact=True))
    return out


def _as_double(ref: PagedKVCache) -> PagedKVCache:
    ref.k_blocks, ref.v_blocks = ref.k_blocks.double(), ref.v_blocks.double()
    return ref


def _enough_blocks(values: dict[str, Any]) -> None:
    bs = values["block_size"]
    # The fork's own token takes one block (a copy of a shared, partly full last block, or a new
    # one); sequence 0's next token needs a new block only when its last one is full.
    need = blocks_for(values["len_a"] + 1, bs) + blocks_for(values["len_b"], bs) + 1
    if need > values["n_blocks"]:
        raise InvalidRunInput(
            f"n_blocks must be at least {need} for these lengths and block size", "n_blocks"
        )


PAGED_KV_CACHE = RunSpec(
    slug="paged-kv-cache",
    entry_point="PagedKVCache",
    also_calls=("paged_attention",),
    summary=(
        "Builds PagedKVCache(n_blocks, block_size, n_heads, head_dim), appends sequences 0 and 1, "
        "forks 0 into 2, appends a token to each of 2 and 0, then compares gather, paged_attention "
        "and num_free_blocks."
    ),
    params=(
        Param("n_blocks", "Blocks", 12, 2, 64),
        Param("block_size", "Block size", 4, 1, 16),
        HEADS,
        HEAD_DIM,
        Param("len_a", "Length of sequence 0", 6, 1, 48),
        Param("len_b", "Length of sequence 1", 3, 1, 48),
        SEED,
    ),
    examples=(
        Example(
            "fork in the middle of a block",
            {"n_blocks": 12, "block_size": 4, "n_heads": 2, "head_dim": 4, "len_a": 6, "len_b": 3, "seed": 0},
        ),
        Example(
            "fork on a full block",
            {"n_blocks": 8, "block_size": 2, "n_heads": 1, "head_dim": 2, "len_a": 4, "len_b": 5, "seed": 1},
        ),
    ),
    case=_paged_case,
    rules=(_enough_blocks,),
)

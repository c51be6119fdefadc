"""Run cases of the three attention challenges: fix-causal-attention, decode-step, gqa-attention.

Inputs are float32 from the case's seed; the references run in float64 on those very inputs
(as the batteries do), so the only tolerance spent is the submission's own rounding.
"""

from __future__ import annotations

from typing import Any

import torch

from graders.checks import decode_step as decode_check
from graders.checks import gqa_attention as gqa_check
from graders.checks.attention_common import decode_tensor, random_attention_weights, submission_context
from graders.checks.fix_causal_attention import known_variants
from graders.checks.report import Mismatch
from graders.examples.spec import SEED, Compared, Example, Param, RunSpec, divisible, generator, randn
from graders.reference.attention import causal_self_attention
from graders.reference.decode import prefill_cache
from graders.reference.gqa import GQA
from graders.sandbox.protocol import SubmissionLink

BATCH = Param("B", "Batch size B", 1, 1, 4)
D_MODEL = Param("d", "Model width d", 16, 4, 128, "a multiple of the head count")
HEADS = Param("n_heads", "Heads", 2, 1, 16)


def _attention_inputs(values: dict[str, Any], T: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    gen = generator(values["seed"])
    w_qkv, w_o = random_attention_weights(gen, values["d"])
    return randn(gen, values["B"], T, values["d"]), w_qkv, w_o


def _causal_case(session: SubmissionLink, values: dict[str, Any]) -> list[Compared]:
    x, w_qkv, w_o = _attention_inputs(values, values["T"])
    h = values["n_heads"]
    with submission_context(f"calling causal_self_attention(x, w_qkv, w_o, {h}) with x {tuple(x.shape)}"):
        got = session.call("causal_self_attention", x, w_qkv, w_o, h)
    x64, wq64, wo64 = x.double(), w_qkv.double(), w_o.double()
    want = causal_self_attention(x64, wq64, wo64, h).float()
    return [Compared("output (B, T, d)", got, want, variants=lambda: known_variants(x64, wq64, wo64, h))]


FIX_CAUSAL = RunSpec(
    slug="fix-causal-attention",
    entry_point="causal_self_attention",
    summary=("Calls causal_self_attention(x, w_qkv, w_o, n_heads) on random x (B, T, d) and weights."),
    params=(BATCH, Param("T", "Tokens T", 5, 1, 32), D_MODEL, HEADS, SEED),
    examples=(
        Example(
            "one sequence, two heads",
            {"B": 1, "T": 5, "d": 16, "n_heads": 2, "seed": 0},
        ),
        Example(
            "a batch of two, four heads",
            {"B": 2, "T": 6, "d": 32, "n_heads": 4, "seed": 1},
        ),
        Example(
            "a single token",
            {"B": 1, "T": 1, "d": 12, "n_heads": 3, "seed": 2},
        ),
    ),
    case=_causal_case,
    rules=(divisible("d", "n_heads"),),
)


def _decode_case(session: SubmissionLink, values: dict[str, Any]) -> list[Compared]:
    steps, h = values["steps"], values["n_heads"]
    x, w_qkv, w_o = _attention_inputs(values, steps)
    cache = session.new_dict()
    outputs = []
    for i in range(steps):
        with submission_context(f"at step {i + 1}, calling step(x, w_qkv, w_o, {h}, cache)"):
            outputs.append(
                decode_tensor(
                    session.call("step", x[:, i : i + 1], w_qkv, w_o, h, cache), f"step {i + 1}'s output"
                )
            )
    x64, wq64, wo64 = x.double(), w_qkv.double(), w_o.double()
    want = causal_self_attention(x64, wq64, wo64, h).float()
    shapes = {tuple(o.shape) for o in outputs}
    got: Any = torch.cat(outputs, dim=1) if len(shapes) == 1 and len(next(iter(shapes))) == 3 else outputs[-1]
    past = prefill_cache(x64, wq64, h)
    last = want.shape[1] - 1

    def variants() -> list[Any]:  # the last step's known mistakes, laid over the right earlier rows
        wrong = decode_check.step_variants(
            x64[:, last:], past["k"][:, :, :last], past["v"][:, :, :last], wq64, wo64, h
        )
        return [(m, torch.cat([want[:, :last].double(), y], dim=1)) for m, y in wrong]

    state = session.get(cache)
    want_k = past["k"].float()
    got_k = state.get("k") if isinstance(state, dict) else state
    return [
        Compared("outputs of every step, stacked (B, steps, d)", got, want, variants=variants),
        Compared(
            "cache['k'] after the last step (B, n_heads, steps, hd)",
            got_k,
            want_k,
            variants=lambda: decode_check.cache_variants("k", past["k"].float(), past["v"].float()),
        ),
    ]


DECODE_STEP = RunSpec(
    slug="decode-step",
    entry_point="step",
    summary=(
        "Feeds `steps` random tokens one at a time to step(...) with one cache; compares with the "
        "full forward."
    ),
    params=(BATCH, Param("steps", "Decode steps", 4, 1, 24), D_MODEL, HEADS, SEED),
    examples=(
        Example(
            "three steps, one sequence",
            {"B": 1, "steps": 3, "d": 16, "n_heads": 2, "seed": 0},
        ),
        Example(
            "five steps, a batch of two",
            {"B": 2, "steps": 5, "d": 24, "n_heads": 3, "seed": 1},
        ),
        Example(
            "the first step alone",
            {"B": 1, "steps": 1, "d": 16, "n_heads": 4, "seed": 2},
        ),
    ),
    case=_decode_case,
    rules=(divisible("d", "n_heads"),),
)


def _gqa_case(session: SubmissionLink, values: dict[str, Any]) -> list[Compared]:
    d, n_q, n_kv = values["d"], values["n_q"], values["n_kv"]
    gen = generator(values["seed"])
    ref = GQA(d, n_q, n_kv).double()
    state = {
        "q.weight": randn(gen, d, d, scale=d**-0.5),
        "kv.weight": randn(gen, 2 * n_kv * (d // n_q), d, scale=d**-0.5),
        "o.weight": randn(gen, d, d, scale=d**-0.5),
    }
    ref.load_state_dict({k: v.double() for k, v in state.items()})
    prompt = randn(gen, values["B"], values["prompt"], d)
    new = randn(gen, values["B"], values["new"], d)
    with submission_context(f"while building GQA({d}, {n_q}, {n_kv}) and loading its state dict"):
        module = session.call("GQA", d, n_q, n_kv, keep=True)
        try:
            session.call(module.load_state_dict, state, keep=True)
        except AttributeError:  # an in-process session looks the attribute up on our side
            raise Mismatch("GQA has no load_state_dict: it should subclass torch.nn.Module") from None
    with submission_context(f"calling forward(x) with the prompt x {tuple(prompt.shape)}"):
        y1, cache = gqa_check.unpack(session.call(module, prompt))
    with submission_context(f"calling forward(x, cache) with x {tuple(new.shape)} and the returned cache"):
        y2, (k2, _) = gqa_check.unpack(session.call(module, new, cache))
    with torch.no_grad():
        want1, want_cache = ref(prompt.double())
        want2, (want_k, _) = ref(new.double(), want_cache)
    w64 = {k: v.double() for k, v in state.items()}
    return [
        Compared(
            "y on the prompt (B, prompt, d)",
            y1,
            want1.float(),
            variants=lambda: gqa_check.output_variants(w64, prompt.double(), None, n_q, n_kv),
        ),
        Compared(
            "y on the new tokens, with the cache (B, new, d)",
            y2,
            want2.float(),
            variants=lambda: gqa_check.output_variants(w64, new.double(), want_cache, n_q, n_kv),
        ),
        Compared("k in the returned cache (B, n_kv, prompt + new, hd)", k2, want_k.float()),
    ]


GQA_ATTENTION = RunSpec(
    slug="gqa-attention",
    entry_point="GQA",
    summary=(
        "Builds GQA(d, n_q, n_kv) with random weights, runs a prompt, then new tokens on the returned cache."
    ),
    params=(
        BATCH,
        Param("prompt", "Prompt tokens", 4, 1, 24),
        Param("new", "New tokens", 2, 1, 8),
        Param("d", "Model width d", 32, 4, 128, "a multiple of n_q"),
        Param("n_q", "Query heads n_q", 4, 1, 16),
        Param("n_kv", "Key-value heads n_kv", 2, 1, 16, "divides n_q"),
        SEED,
    ),
    examples=(
        Example(
            "two query heads per kv head",
            {"B": 1, "prompt": 4, "new": 2, "d": 32, "n_q": 4, "n_kv": 2, "seed": 0},
        ),
        Example(
            "multi-query (one kv head)",
            {"B": 2, "prompt": 3, "new": 1, "d": 24, "n_q": 3, "n_kv": 1, "seed": 1},
        ),
        Example(
            "plain multi-head (n_kv = n_q)",
            {"B": 1, "prompt": 5, "new": 3, "d": 16, "n_q": 2, "n_kv": 2, "seed": 2},
        ),
    ),
    case=_gqa_case,
    rules=(divisible("d", "n_q"), divisible("n_q", "n_kv")),
)

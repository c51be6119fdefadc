"""A battery is only as good as the mistakes it can see: mutations of each worked solution.

Each mutation is a realistic slip in a correct solution: two inputs the contract tells
apart read the wrong way round, or an optional argument ignored. Each must fail on every
run (several seeds, since inputs are random), with a message that says what went wrong,
which only holds when every battery tests each field with values that differ from the
others and every optional argument with a value other than its default.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from graders.checks import load_check
from tests.graders.checks.helpers import challenge_dir, run

SEEDS = (1, 2, 3, 4, 5, 6)


@dataclass(frozen=True)
class Mutation:
    slug: str
    name: str
    edits: tuple[tuple[str, str], ...]  # (text in solution.py, its replacement), each must occur
    phrase: str  # what the failed tests' messages or the diagnosis must say

    @property
    def id(self) -> str:
        return f"{self.slug}/{self.name}"


MUTATIONS = [
    # fix-causal-attention: causal_self_attention(x, w_qkv, w_o, n_heads)
    Mutation(
        "fix-causal-attention",
        "q-and-k-swapped",
        (("q, k, v = (x @ w_qkv).split", "k, q, v = (x @ w_qkv).split"),),
        "differs by up to",
    ),
    Mutation(
        "fix-causal-attention",
        "batch-and-time-swapped",
        tuple((f"{t} = {t}.view(B, T, n_heads, hd)", f"{t} = {t}.view(T, B, n_heads, hd)") for t in "qkv"),
        "your code raised",
    ),
    Mutation(
        "fix-causal-attention",
        "n_heads-ignored",
        (("hd = d // n_heads", "n_heads = 1\n    hd = d"),),
        "differs by up to",
    ),
    # decode-step: step(x, w_qkv, w_o, n_heads, cache)
    Mutation(
        "decode-step",
        "q-and-k-swapped",
        (("q, k, v = (x @ w_qkv).split", "k, q, v = (x @ w_qkv).split"),),
        "differs by up to",
    ),
    Mutation(
        "decode-step",
        "batch-and-heads-swapped",
        tuple(
            (
                f"{t} = {t}.view(B, T, n_heads, hd).transpose(1, 2)",
                f"{t} = {t}.view(n_heads, T, B, hd).permute(2, 0, 1, 3)",
            )
            for t in "qkv"
        ),
        "",
    ),
    Mutation(
        "decode-step",
        "cache-k-and-v-swapped",
        (('cache["k"], cache["v"] = k, v', 'cache["k"], cache["v"] = v, k'),),
        "cache['k'] and cache['v'] are swapped",
    ),
    # gqa-attention: GQA(d, n_q, n_kv), forward(x, cache=None)
    Mutation(
        "gqa-attention",
        "n_q-and-n_kv-swapped",
        (("self.n_q, self.n_kv = n_q, n_kv", "self.n_q, self.n_kv = n_kv, n_q"),),
        "",
    ),
    Mutation(
        "gqa-attention",
        "k-and-v-swapped",
        (
            (
                "k, v = self.kv(x).view(B, T, 2, self.n_kv, self.hd).unbind(2)",
                "v, k = self.kv(x).view(B, T, 2, self.n_kv, self.hd).unbind(2)",
            ),
        ),
        "",
    ),
    Mutation(
        "gqa-attention",
        "cache-argument-ignored",
        (("if cache is not None:", "if False:"),),
        "the cache passed in is not used",
    ),
    # kv-cache-buffer: KVCache(n_layers, batch, n_heads, max_len, head_dim, dtype=torch.float32, device="cpu")
    Mutation(
        "kv-cache-buffer",
        "n_layers-and-batch-swapped",
        (("def __init__(self, n_layers, batch,", "def __init__(self, batch, n_layers,"),),
        "",
    ),
    Mutation(
        "kv-cache-buffer",
        "n_heads-and-head_dim-swapped",
        (
            (
                "self.k = torch.zeros(shape,",
                "shape = shape[:2] + (head_dim, max_len, n_heads)\n        self.k = torch.zeros(shape,",
            ),
        ),
        "",
    ),
    Mutation(
        "kv-cache-buffer",
        "dtype-ignored",
        (("dtype=dtype, device=device)", "device=device)"),),
        "dtype",
    ),
    # kv-cache-bytes: kv_cache_bytes(..., batch=1, bytes_per_element=2) and kv_cache_bytes_from_config
    Mutation(
        "kv-cache-bytes",
        "layers-and-heads-swapped",
        (
            (
                'n_layers = _get(config, "num_hidden_layers", "n_layer")',
                'n_layers = _get(config, "num_attention_heads", "n_head")',
            ),
            (
                'n_heads = _get(config, "num_attention_heads", "n_head")',
                'n_heads = _get(config, "num_hidden_layers", "n_layer")',
            ),
        ),
        "",
    ),
    Mutation(
        "kv-cache-bytes",
        "kv-heads-read-as-query-heads",
        (
            (
                'n_kv_heads = _get(config, "num_key_value_heads")',
                'n_kv_heads = _get(config, "num_attention_heads")',
            ),
        ),
        "",
    ),
    Mutation(
        "kv-cache-bytes",
        "explicit-head_dim-ignored",
        (
            (
                'head_dim = _get(config, "head_dim")',
                'head_dim = _get(config, "hidden_size") // n_heads if False else None',
            ),
        ),
        "",
    ),
    Mutation(
        "kv-cache-bytes",
        "batch-ignored-from-config",
        (
            (
                "return kv_cache_bytes(n_layers, n_kv_heads, head_dim, seq_len, batch,",
                "return kv_cache_bytes(n_layers, n_kv_heads, head_dim, seq_len, 1,",
            ),
        ),
        "",
    ),
    Mutation(
        "kv-cache-bytes",
        "bytes_per_element-ignored",
        (
            (
                "return 2 * n_layers * n_kv_heads * head_dim * seq_len * batch * bytes_per_element",
                "return 2 * n_layers * n_kv_heads * head_dim * seq_len * batch * 2",
            ),
        ),
        "",
    ),
    # numpy-cached-generation: params E, W_q, W_k, W_v, W_o, W_lm
    Mutation(
        "numpy-cached-generation",
        "W_q-and-W_k-swapped",
        (
            ('q = x @ params["W_q"]', 'q = x @ params["W_k"]'),
            ('k = x @ params["W_k"]', 'k = x @ params["W_q"]'),
        ),
        "",
    ),
    Mutation(
        "numpy-cached-generation",
        "W_v-and-W_o-swapped",
        (
            ('v = x @ params["W_v"]', 'v = x @ params["W_o"]'),
            ('(ctx @ params["W_o"])', '(ctx @ params["W_v"])'),
        ),
        "",
    ),
]


def mutate(mutation: Mutation) -> str:
    code = (challenge_dir(mutation.slug) / "solution.py").read_text()
    for old, new in mutation.edits:
        assert old in code, f"{mutation.id}: {old!r} is not in the solution any more"
        code = code.replace(old, new)
    return code


@pytest.mark.parametrize("mutation", MUTATIONS, ids=lambda m: m.id)
def test_a_mutated_solution_is_caught_on_every_run(mutation: Mutation) -> None:
    check = load_check(mutation.slug)
    code = mutate(mutation)
    for seed in SEEDS:
        report, _ = run(check, code, seed=seed)
        failed = [t for t in report.tests if not t.passed]
        assert failed, f"{mutation.id} passed with seed {seed}"
        feedback = " ".join(report.diagnosis + [t.message for t in failed])
        assert mutation.phrase in feedback, f"{mutation.id}, seed {seed}: {feedback[:600]}"
        assert all(t.message for t in failed), failed

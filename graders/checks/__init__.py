"""One module per challenge: its battery of tests, probes and known-mistake variants.

Each module defines:
    SLUG: str          the challenge slug (shared/CONTRACT.md)
    ENTRY_POINT: str   the top-level name the submission must define
    def run(session: SubmissionLink) -> CheckReport

`run` drives the submission only through the SubmissionLink (graders/sandbox/protocol.py),
makes fresh random inputs itself and compares against graders/reference with its
own torch; nothing the submission returns is trusted beyond being data.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from graders.checks.report import CheckReport

CHALLENGE_MODULES = {
    "fix-causal-attention": "graders.checks.fix_causal_attention",
    "decode-step": "graders.checks.decode_step",
    "gqa-attention": "graders.checks.gqa_attention",
    "kv-cache-buffer": "graders.checks.kv_cache_buffer",
    "kv-cache-bytes": "graders.checks.kv_cache_bytes",
    "numpy-cached-generation": "graders.checks.numpy_cached_generation",
    "rope-cached-attention": "graders.checks.rope_cached_attention",
    "left-padded-decoding": "graders.checks.left_padded_decoding",
    "tiled-attention": "graders.checks.tiled_attention",
    "sliding-window-cache": "graders.checks.sliding_window_cache",
    "paged-kv-cache": "graders.checks.paged_kv_cache",
    "speculative-decoding": "graders.checks.speculative_decoding",
    "sampling": "graders.checks.sampling",
    "int8-kv-cache": "graders.checks.int8_kv_cache",
    "moe-routing": "graders.checks.moe_routing",
    "logits-processors": "graders.checks.logits_processors",
    "continuous-batching": "graders.checks.continuous_batching",
    "radix-prefix-cache": "graders.checks.radix_prefix_cache",
    "int4-weight-matmul": "graders.checks.int4_weight_matmul",
    "beam-search": "graders.checks.beam_search",
    "mla-decode": "graders.checks.mla_decode",
    "tensor-parallel-attention": "graders.checks.tensor_parallel_attention",
    "llama-block-decode": "graders.checks.llama_block_decode",
}

__all__ = ["CHALLENGE_MODULES", "CheckReport", "load_check"]


def load_check(slug: str) -> ModuleType:
    """The check module of a challenge; KeyError for an unknown slug."""
    return importlib.import_module(CHALLENGE_MODULES[slug])

"""Every challenge's Run spec, by slug (the same slugs as graders.checks.CHALLENGE_MODULES)."""

from __future__ import annotations

from graders.examples.attention import DECODE_STEP, FIX_CAUSAL, GQA_ATTENTION
from graders.examples.beam import BEAM_SEARCH
from graders.examples.caches import KV_CACHE_BUFFER, PAGED_KV_CACHE, SLIDING_WINDOW_CACHE
from graders.examples.functions import KV_CACHE_BYTES, NUMPY_CACHED_GENERATION, SAMPLING, SPECULATIVE_DECODING
from graders.examples.int4 import INT4_WEIGHT_MATMUL
from graders.examples.kernels import (
    INT8_KV_CACHE,
    LEFT_PADDED_DECODING,
    ROPE_CACHED_ATTENTION,
    TILED_ATTENTION,
)
from graders.examples.llama import LLAMA_BLOCK_DECODE
from graders.examples.model import MLA_DECODE, MOE_ROUTING
from graders.examples.parallel import TENSOR_PARALLEL_ATTENTION
from graders.examples.prefix import RADIX_PREFIX_CACHE
from graders.examples.processors import LOGITS_PROCESSORS
from graders.examples.scheduling import CONTINUOUS_BATCHING
from graders.examples.spec import RunSpec

RUN_SPECS: dict[str, RunSpec] = {
    spec.slug: spec
    for spec in (
        FIX_CAUSAL,
        DECODE_STEP,
        GQA_ATTENTION,
        KV_CACHE_BUFFER,
        KV_CACHE_BYTES,
        NUMPY_CACHED_GENERATION,
        ROPE_CACHED_ATTENTION,
        LEFT_PADDED_DECODING,
        TILED_ATTENTION,
        SLIDING_WINDOW_CACHE,
        PAGED_KV_CACHE,
        SPECULATIVE_DECODING,
        SAMPLING,
        INT8_KV_CACHE,
        MOE_ROUTING,
        LOGITS_PROCESSORS,
        CONTINUOUS_BATCHING,
        RADIX_PREFIX_CACHE,
        INT4_WEIGHT_MATMUL,
        BEAM_SEARCH,
        MLA_DECODE,
        TENSOR_PARALLEL_ATTENTION,
        LLAMA_BLOCK_DECODE,
    )
}


def spec_for(slug: str) -> RunSpec:
    """The Run spec of a challenge; KeyError for an unknown slug."""
    return RUN_SPECS[slug]

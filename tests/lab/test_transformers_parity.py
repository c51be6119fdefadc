"""The lab's decoder is GPT-2: Hugging Face's GPT2LMHeadModel with the same weights gives the same logits.

No download: transformers builds the model from GPT2Config() (GPT-2 small's shape) with random
weights, and we copy its state dict into ours.
"""

from __future__ import annotations

import pytest
import torch
import transformers  # a dev dependency: the comparison must run, never skip

from graders.reference.gpt2 import GPT2, GPT2Config


@pytest.fixture(scope="module")
def pair() -> tuple[GPT2, object]:
    torch.manual_seed(0)
    hf = transformers.GPT2LMHeadModel(transformers.GPT2Config()).eval()
    ours = GPT2(GPT2Config(), seed=1).eval()
    ours.load_hf_state_dict(hf.state_dict())
    return ours, hf


@torch.no_grad()
def test_prefill_logits_match_transformers(pair) -> None:  # type: ignore[no-untyped-def]
    ours, hf = pair
    tokens = torch.randint(0, 50257, (2, 24), generator=torch.Generator().manual_seed(0))
    want = hf(tokens).logits
    got, _ = ours(tokens)
    assert (got - want).abs().max().item() < 1e-4


@torch.no_grad()
def test_cached_decode_logits_match_transformers(pair) -> None:  # type: ignore[no-untyped-def]
    ours, hf = pair
    tokens = torch.randint(0, 50257, (1, 17), generator=torch.Generator().manual_seed(1))
    out = hf(tokens[:, :16], use_cache=True)
    want = hf(tokens[:, 16:], cache=out.cache, use_cache=True).logits
    _, cache = ours(tokens[:, :16])
    got, _ = ours(tokens[:, 16:], cache)
    assert (got - want).abs().max().item() < 1e-4

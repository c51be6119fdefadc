"""The lab's GPT-2 decoder: cached equals uncached, explicit equals fused, the position limit, the bytes."""

from __future__ import annotations

import pytest
import torch

from graders.reference.gpt2 import GPT2, GPT2Config

# Every field differs from the others, so a swapped pair of fields changes a shape.
SMALL = GPT2Config(n_layer=3, n_head=4, n_embd=48, n_positions=40, vocab_size=97)


@pytest.fixture(scope="module")
def model() -> GPT2:
    torch.manual_seed(0)
    return GPT2(SMALL, seed=3).eval()


def _tokens(b: int, t: int, seed: int = 0) -> torch.Tensor:
    return torch.randint(0, SMALL.vocab_size, (b, t), generator=torch.Generator().manual_seed(seed))


@torch.no_grad()
def test_shapes_and_cache_layout(model: GPT2) -> None:
    logits, cache = model(_tokens(2, 7))
    assert logits.shape == (2, 7, SMALL.vocab_size)
    assert len(cache) == SMALL.n_layer
    assert cache[0][0].shape == (2, SMALL.n_head, 7, SMALL.head_dim)


@torch.no_grad()
def test_explicit_and_fused_paths_agree(model: GPT2) -> None:
    tokens = _tokens(2, 9)
    fused, cache_f = model(tokens[:, :6], fused=True)
    explicit, cache_e = model(tokens[:, :6], fused=False)
    torch.testing.assert_close(fused, explicit, rtol=1e-4, atol=1e-5)
    # A chunk after a cache takes the masked path in both.
    f2, _ = model(tokens[:, 6:], cache_f, fused=True)
    e2, _ = model(tokens[:, 6:], cache_e, fused=False)
    torch.testing.assert_close(f2, e2, rtol=1e-4, atol=1e-5)


@torch.no_grad()
def test_cached_steps_and_chunks_match_one_full_pass(model: GPT2) -> None:
    tokens = _tokens(3, 12, seed=1)
    full, _ = model(tokens)
    logits, cache = model(tokens[:, :5])
    rows = [logits]
    chunk, cache = model(tokens[:, 5:8], cache)  # a chunk of three after the prompt
    rows.append(chunk)
    for i in range(8, 12):
        step, cache = model(tokens[:, i : i + 1], cache)
        rows.append(step)
    torch.testing.assert_close(torch.cat(rows, dim=1), full, rtol=1e-4, atol=1e-5)


@torch.no_grad()
def test_greedy_tokens_identical_with_and_without_cache(model: GPT2) -> None:
    prompt = _tokens(2, 4, seed=2)
    assert torch.equal(
        model.generate(prompt, 10, use_cache=True), model.generate(prompt, 10, use_cache=False)
    )


@torch.no_grad()
def test_one_position_past_the_table_raises_index_error(model: GPT2) -> None:
    tokens = _tokens(1, SMALL.n_positions + 1)
    _, cache = model(tokens[:, : SMALL.n_positions])
    with pytest.raises(IndexError, match="token 41 needs position index 40"):
        model(tokens[:, SMALL.n_positions :], cache)


@torch.no_grad()
def test_cache_bytes_match_the_formula(model: GPT2) -> None:
    _, cache = model(_tokens(1, 10))
    measured = sum(t.numel() * t.element_size() for layer in cache for t in layer)
    assert measured == SMALL.kv_bytes_per_token(4) * 10
    assert GPT2Config().kv_bytes_per_token(4) == 72 * 1024  # GPT-2 small in fp32: the seed's 72 KiB


def test_the_seed_is_honoured() -> None:
    a, b, c = GPT2(SMALL, seed=1), GPT2(SMALL, seed=1), GPT2(SMALL, seed=2)
    wa, wb, wc = (m.transformer.h[0].attn.c_attn.weight for m in (a, b, c))
    assert torch.equal(wa, wb) and not torch.equal(wa, wc)


def test_a_width_the_heads_do_not_divide_is_refused_naming_both() -> None:
    with pytest.raises(ValueError, match="d=50 is not a multiple of n_head=4"):
        GPT2Config(n_layer=1, n_head=4, n_embd=50)

# expect: failed
# diagnosis: the step ignored a change to the cached keys and values
# Hostile: keeps its own copy of every sequence's tokens and recomputes the whole causal pass from
# it, ignoring the cache, except when the call looks like the grader's probe: a dict it never
# filled itself, one whose length it did not expect, or one whose position 1 (the row the probe
# used to change) differs from its own. Passed "reads the past from the cache" while reading the
# cache in 2 of 36 calls, until every call became a possible probe.
import math

import torch

_seen = {}  # id(cache) -> the tokens this sequence has had, (B, t, d)


def _heads(t, B, n_heads, hd):
    return t.view(B, -1, n_heads, hd).transpose(1, 2)  # (B, n_heads, T, hd)


def _honest(x, w_qkv, w_o, n_heads, cache):
    B, _, d = x.shape
    hd = d // n_heads
    q, k, v = (_heads(t, B, n_heads, hd) for t in (x @ w_qkv).split(d, dim=-1))
    if "k" in cache:
        k, v = torch.cat([cache["k"], k], dim=2), torch.cat([cache["v"], v], dim=2)
    cache["k"], cache["v"] = k, v
    y = ((q @ k.transpose(-2, -1)) / math.sqrt(hd)).softmax(-1) @ v
    return y.transpose(1, 2).reshape(B, 1, d) @ w_o


def step(x, w_qkv, w_o, n_heads, cache):
    B, _, d = x.shape
    hd = d // n_heads
    tokens = _seen.get(id(cache))
    mine = tokens is not None and "k" in cache and cache["k"].shape[2] == tokens.shape[1]
    if mine and tokens.shape[1] > 1:
        own_k = _heads((tokens @ w_qkv).split(d, dim=-1)[1], B, n_heads, hd)
        mine = torch.allclose(cache["k"][:, :, 1], own_k[:, :, 1], atol=1e-5)
    if not mine and ("k" in cache or tokens is not None):
        _seen.pop(id(cache), None)  # the probe: be honest with this cache from now on
        return _honest(x, w_qkv, w_o, n_heads, cache)
    tokens = x if tokens is None else torch.cat([tokens, x], dim=1)  # (B, t, d)
    _seen[id(cache)] = tokens
    q, k, v = (_heads(t, B, n_heads, hd) for t in (tokens @ w_qkv).split(d, dim=-1))
    T = tokens.shape[1]
    mask = torch.ones(T, T, dtype=torch.bool).tril()
    scores = ((q @ k.transpose(-2, -1)) / math.sqrt(hd)).masked_fill(~mask, float("-inf"))
    y = scores.softmax(-1) @ v  # the full causal pass, recomputed every step
    cache["k"], cache["v"] = k, v
    return y.transpose(1, 2).reshape(B, T, d)[:, -1:] @ w_o

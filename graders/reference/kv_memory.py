"""KV-cache memory arithmetic, exact in integers.

bytes = 2 (one K and one V tensor) * layers * kv_heads * head_dim * seq_len * batch * bytes_per_element
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def kv_cache_bytes(
    n_layers: int,
    n_kv_heads: int,
    head_dim: int,
    seq_len: int,
    batch: int = 1,
    bytes_per_element: int = 2,
) -> int:
    return 2 * n_layers * n_kv_heads * head_dim * seq_len * batch * bytes_per_element


def _first_present(config: Mapping[str, Any], *keys: str) -> Any:
    """The first key that is present and not null; None when none is."""
    for key in keys:
        if config.get(key) is not None:
            return config[key]
    return None


def cache_shape_from_config(config: Mapping[str, Any]) -> tuple[int, int, int]:
    """(layers, kv_heads, head_dim) from a Hugging Face config.json (Llama- or GPT-2-style keys)."""
    n_layers = _first_present(config, "num_hidden_layers", "n_layer")
    n_heads = _first_present(config, "num_attention_heads", "n_head")
    hidden = _first_present(config, "hidden_size", "n_embd")
    if n_layers is None or n_heads is None or hidden is None:
        raise ValueError("config needs layers, heads and hidden size (num_hidden_layers/n_layer, ...)")
    n_kv_heads = _first_present(config, "num_key_value_heads")
    head_dim = _first_present(config, "head_dim")
    # A config without num_key_value_heads is plain multi-head attention.
    n_kv_heads = int(n_heads) if n_kv_heads is None else int(n_kv_heads)
    head_dim = int(hidden) // int(n_heads) if head_dim is None else int(head_dim)
    return int(n_layers), n_kv_heads, head_dim


def kv_cache_bytes_from_config(
    config: Mapping[str, Any], seq_len: int, batch: int = 1, bytes_per_element: int = 2
) -> int:
    n_layers, n_kv_heads, head_dim = cache_shape_from_config(config)
    return kv_cache_bytes(n_layers, n_kv_heads, head_dim, seq_len, batch, bytes_per_element)

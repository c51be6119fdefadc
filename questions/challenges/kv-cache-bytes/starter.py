def kv_cache_bytes(n_layers, n_kv_heads, head_dim, seq_len, batch=1, bytes_per_element=2):
    """Bytes of KV cache for `batch` sequences of `seq_len` tokens, as an exact int."""
    raise NotImplementedError


def kv_cache_bytes_from_config(config, seq_len, batch=1, bytes_per_element=2):
    """The same, with the shape read from a Hugging Face config.json loaded as a dict.

    Llama-style keys: num_hidden_layers, num_attention_heads, hidden_size, and the optional
    num_key_value_heads and head_dim (absent or null: use their defaults).
    GPT-2-style keys: n_layer, n_head, n_embd.
    """
    raise NotImplementedError

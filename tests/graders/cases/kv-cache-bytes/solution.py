# expect: passed
# The challenge's worked solution, as shown to users.
"""KV-cache memory in bytes, exactly: from the shape, and from a Hugging Face config.json."""


def kv_cache_bytes(n_layers, n_kv_heads, head_dim, seq_len, batch=1, bytes_per_element=2):
    # One key vector and one value vector (the 2) of head_dim numbers, for every layer,
    # every key-value head, every token and every sequence in the batch. All ints, so
    # the answer is exact however large it gets: Python ints never overflow or round.
    return 2 * n_layers * n_kv_heads * head_dim * seq_len * batch * bytes_per_element


def _get(config, *keys):
    """The first of `keys` that is present and not null in the config, else None."""
    for key in keys:
        if config.get(key) is not None:
            return config[key]
    return None


def kv_cache_bytes_from_config(config, seq_len, batch=1, bytes_per_element=2):
    # Llama-style names first, GPT-2-style names as the fallback.
    n_layers = _get(config, "num_hidden_layers", "n_layer")
    n_heads = _get(config, "num_attention_heads", "n_head")
    hidden = _get(config, "hidden_size", "n_embd")
    # Optional keys: without num_key_value_heads the model is plain multi-head attention
    # (one KV head per query head); without head_dim the heads split hidden_size evenly.
    n_kv_heads = _get(config, "num_key_value_heads")
    if n_kv_heads is None:
        n_kv_heads = n_heads
    head_dim = _get(config, "head_dim")
    if head_dim is None:
        head_dim = hidden // n_heads  # //, not /: a float here would make the result a float
    # The cache scales with the KV heads, not the query heads: that is GQA's whole saving.
    # The config's torch_dtype is deliberately ignored: the cache may be kept at another
    # precision than the weights, so the caller says how many bytes a number takes.
    return kv_cache_bytes(n_layers, n_kv_heads, head_dim, seq_len, batch, bytes_per_element)

# expect: failed
# diagnosis: ignored batch
# Drops the batch factor.
def kv_cache_bytes(n_layers, n_kv_heads, head_dim, seq_len, batch=1, bytes_per_element=2):
    return 2 * n_layers * n_kv_heads * head_dim * seq_len * bytes_per_element


def kv_cache_bytes_from_config(config, seq_len, batch=1, bytes_per_element=2):
    layers = config.get("num_hidden_layers") or config.get("n_layer")
    heads = config.get("num_attention_heads") or config.get("n_head")
    hidden = config.get("hidden_size") or config.get("n_embd")
    kv_heads = config.get("num_key_value_heads") or heads
    head_dim = config.get("head_dim") or hidden // heads
    return kv_cache_bytes(layers, kv_heads, head_dim, seq_len, batch, bytes_per_element)

# expect: failed
# diagnosis: GPT-2-style keys (n_layer, n_head, n_embd) are not read
# Knows only the Llama key names.
def kv_cache_bytes(n_layers, n_kv_heads, head_dim, seq_len, batch=1, bytes_per_element=2):
    return 2 * n_layers * n_kv_heads * head_dim * seq_len * batch * bytes_per_element


def kv_cache_bytes_from_config(config, seq_len, batch=1, bytes_per_element=2):
    layers = config["num_hidden_layers"]
    heads = config["num_attention_heads"]
    hidden = config["hidden_size"]
    kv_heads = config.get("num_key_value_heads") or heads
    head_dim = config.get("head_dim") or hidden // heads
    return kv_cache_bytes(layers, kv_heads, head_dim, seq_len, batch, bytes_per_element)

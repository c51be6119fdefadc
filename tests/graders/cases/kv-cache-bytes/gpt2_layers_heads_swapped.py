# expect: failed
# diagnosis: n_layer and n_head are swapped
# Reads the GPT-2-style keys the wrong way round: n_head as the layer count, n_layer as the heads.
# GPT-2 small has 12 of each, so only a config where they differ can tell.
def kv_cache_bytes(n_layers, n_kv_heads, head_dim, seq_len, batch=1, bytes_per_element=2):
    return 2 * n_layers * n_kv_heads * head_dim * seq_len * batch * bytes_per_element


def kv_cache_bytes_from_config(config, seq_len, batch=1, bytes_per_element=2):
    if "n_layer" in config:
        layers, heads, hidden = config["n_head"], config["n_layer"], config["n_embd"]
    else:
        layers, heads = config["num_hidden_layers"], config["num_attention_heads"]
        hidden = config["hidden_size"]
    kv_heads = config.get("num_key_value_heads") or heads
    head_dim = config.get("head_dim") or hidden // heads
    return kv_cache_bytes(layers, kv_heads, head_dim, seq_len, batch, bytes_per_element)

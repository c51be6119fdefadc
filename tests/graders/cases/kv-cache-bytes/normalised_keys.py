# expect: passed
# A different style: normalise GPT-2 names to Llama names first, then multiply with math.prod.
import math

ALIASES = {"n_layer": "num_hidden_layers", "n_head": "num_attention_heads", "n_embd": "hidden_size"}


def kv_cache_bytes(n_layers, n_kv_heads, head_dim, seq_len, batch=1, bytes_per_element=2):
    return math.prod([2, n_layers, n_kv_heads, head_dim, seq_len, batch, bytes_per_element])


def kv_cache_bytes_from_config(config, seq_len, batch=1, bytes_per_element=2):
    cfg = {ALIASES.get(key, key): value for key, value in config.items() if value is not None}
    heads = cfg["num_attention_heads"]
    return kv_cache_bytes(
        cfg["num_hidden_layers"],
        cfg.get("num_key_value_heads", heads),
        cfg.get("head_dim", cfg["hidden_size"] // heads),
        seq_len,
        batch=batch,
        bytes_per_element=bytes_per_element,
    )

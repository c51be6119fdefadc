# expect: error
# Only the config function is defined, so the entry point kv_cache_bytes is missing.
def kv_cache_bytes_from_config(config, seq_len, batch=1, bytes_per_element=2):
    return 0

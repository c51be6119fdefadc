# expect: error
# The function is named decode_step, not step.
def decode_step(x, w_qkv, w_o, n_heads, cache):
    return x

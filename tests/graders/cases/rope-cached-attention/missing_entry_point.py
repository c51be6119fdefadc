# No rope_attention at all: an error verdict naming the entry point.
# expect: error
import torch


def apply_rope(x, positions, base=10000.0):
    return x

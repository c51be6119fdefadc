# expect: error
# Does not parse.
import torch


class KVCache:
    def update(self, layer, k, v, start)
        return k, v

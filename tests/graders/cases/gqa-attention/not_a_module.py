# expect: failed
# diagnosis: it should subclass torch.nn.Module
# A plain class: it has a forward but nothing to load a state dict into.
class GQA:
    def __init__(self, d, n_q, n_kv):
        self.d = d

    def forward(self, x, cache=None):
        return x, (x, x)

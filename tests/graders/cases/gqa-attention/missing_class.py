# expect: error
# The class is called GroupedQueryAttention, not GQA.
import torch.nn as nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d, n_q, n_kv):
        super().__init__()

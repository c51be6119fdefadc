import math
from collections import deque


class Scheduler:
    def __init__(self, num_blocks, block_size, max_num_batched_tokens, max_num_seqs):
        self.num_blocks = num_blocks
        self.block_size = block_size
        self.max_num_batched_tokens = max_num_batched_tokens
        self.max_num_seqs = max_num_seqs
        self.free = num_blocks
        self.waiting = deque()  # front first
        self.running = []  # in the order admitted

    def add_request(self, req_id, prompt_len, max_new_tokens):
        """Queue a request at the back; ValueError if it can never fit in num_blocks."""
        raise NotImplementedError

    def schedule(self):
        """Plan and run one step; return [(req_id, n_tokens_computed), ...] in the order scheduled."""
        raise NotImplementedError

    def finished(self):
        """Finished request ids, in finishing order."""
        raise NotImplementedError

    def num_free_blocks(self):
        raise NotImplementedError

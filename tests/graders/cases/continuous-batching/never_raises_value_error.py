# expect: failed
# diagnosis: add_request accepts a request that can never fit
# never raises value error: one rule of the worked solution broken.
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
        self.done = []
        self.requests = {}  # req_id -> {"prompt", "max_new", "tokens", "computed", "blocks"}

    def add_request(self, req_id, prompt_len, max_new_tokens):
        # The last output token is never fed back, so it needs no cache slot.
        self.requests[req_id] = {
            "prompt": prompt_len, "max_new": max_new_tokens,
            "tokens": prompt_len, "computed": 0, "blocks": 0,
        }
        self.waiting.append(req_id)

    def finished(self):
        return list(self.done)

    def num_free_blocks(self):
        return self.free

    def _new_blocks(self, req_id, n):
        r = self.requests[req_id]
        return max(0, math.ceil((r["computed"] + n) / self.block_size) - r["blocks"])

    def _take(self, req_id, n):
        need = self._new_blocks(req_id, n)
        self.free -= need
        self.requests[req_id]["blocks"] += need

    def _preempt_last(self):
        victim = self.running.pop()
        r = self.requests[victim]
        self.free += r["blocks"]
        r["blocks"] = 0
        r["computed"] = 0  # recompute later: the outputs stay in r["tokens"]
        self.waiting.appendleft(victim)
        return victim

    def schedule(self):
        budget = self.max_num_batched_tokens
        plan = []
        preempted = False
        i = 0
        while i < len(self.running) and budget > 0:
            req_id = self.running[i]
            r = self.requests[req_id]
            n = min(r["tokens"] - r["computed"], budget)
            while self._new_blocks(req_id, n) > self.free:
                preempted = True
                if self._preempt_last() == req_id:
                    break
            if req_id in self.running:
                self._take(req_id, n)
                plan.append((req_id, n))
                budget -= n
                i += 1
        if not preempted:
            while self.waiting and len(self.running) < self.max_num_seqs and budget > 0:
                req_id = self.waiting[0]
                r = self.requests[req_id]
                n = min(r["tokens"] - r["computed"], budget)
                if self._new_blocks(req_id, n) > self.free:
                    break  # first come, first served
                self.waiting.popleft()
                self.running.append(req_id)
                self._take(req_id, n)
                plan.append((req_id, n))
                budget -= n
        for req_id, n in plan:
            r = self.requests[req_id]
            r["computed"] += n
            if r["computed"] == r["tokens"]:
                r["tokens"] += 1  # this step's logits give the next token
            if r["tokens"] - r["prompt"] == r["max_new"]:
                self.running.remove(req_id)
                self.free += r["blocks"]
                r["blocks"] = 0
                self.done.append(req_id)
        return plan

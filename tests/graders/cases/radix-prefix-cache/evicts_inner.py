# expect: failed
# diagnosis: a token another cached token follows is evicted
# A flat dict of cached prefixes whose eviction takes the least recently used prefix of all, not
# only the leaves: on a tie it is the first stored, an inner token, and its followers are stranded
# (still counted, never matched again).
class PrefixCache:
    def __init__(self, capacity):
        self.capacity = capacity
        self.clock = 0
        self.used = {}  # prefix tuple -> tick last used, in the order first stored

    def __len__(self):
        return len(self.used)

    def match(self, tokens):
        self.clock += 1
        n = 0
        while n < len(tokens) and tuple(tokens[: n + 1]) in self.used:
            n += 1
            self.used[tuple(tokens[:n])] = self.clock
        return n

    def insert(self, tokens):
        self.clock += 1
        new = 0
        for i in range(len(tokens)):
            prefix = tuple(tokens[: i + 1])
            new += prefix not in self.used
            self.used[prefix] = self.clock
        while len(self.used) > self.capacity:
            oldest = min(self.used, key=self.used.get)
            del self.used[oldest]
        return new

# expect: passed
# Another right answer: no tree at all, a dict of every cached prefix with its last-used tick.
# A leaf is a prefix that no other cached prefix extends; the battery must not ask for a tree.
class PrefixCache:
    def __init__(self, capacity):
        self.capacity = capacity
        self.clock = 0
        self.used = {}  # prefix tuple -> tick last used

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
            followed = {p[:-1] for p in self.used}
            leaves = [p for p in self.used if p not in followed]
            del self.used[min(leaves, key=self.used.get)]
        return new

# expect: error
# The class is misnamed: the grader calls PrefixCache.
class RadixCache:
    def __init__(self, capacity):
        self.capacity = capacity

    def __len__(self):
        return 0

    def match(self, tokens):
        return 0

    def insert(self, tokens):
        return len(tokens)

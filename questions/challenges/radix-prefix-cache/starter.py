class Node:
    def __init__(self, token, parent):
        self.token = token  # None for the root
        self.parent = parent
        self.children = {}  # next token -> Node
        self.last_used = 0  # the tick of the call that last used this token


class PrefixCache:
    def __init__(self, capacity):
        self.capacity = capacity
        self.root = Node(None, None)
        self.clock = 0  # ticks once per match or insert
        self.size = 0  # tokens stored

    def __len__(self):
        raise NotImplementedError

    def match(self, tokens):
        """The length of the longest cached prefix of tokens; its tokens become used now."""
        raise NotImplementedError

    def insert(self, tokens):
        """Store tokens, sharing the cached prefix; return how many were new; then evict LRU leaves."""
        raise NotImplementedError

# expect: failed
# diagnosis: insert's newly stored count is taken after eviction
# how much the cache grew: one rule of the worked solution broken.
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
        return self.size

    def match(self, tokens):
        self.clock += 1
        node = self.root
        matched = 0
        for token in tokens:
            node = node.children.get(token)
            if node is None:
                break
            node.last_used = self.clock  # only the matched prefix is used
            matched += 1
        return matched

    def insert(self, tokens):
        self.clock += 1
        before = self.size
        node = self.root
        new = 0
        for token in tokens:
            child = node.children.get(token)
            if child is None:
                child = Node(token, node)
                node.children[token] = child
                new += 1
            child.last_used = self.clock  # shared tokens are used by this call too
            node = child
        self.size += new
        while self.size > self.capacity:  # evict after storing: the new path has the newest tick
            self._evict()
        return self.size - before

    def _leaves(self):
        stack, leaves = list(self.root.children.values()), []
        while stack:
            node = stack.pop()
            if node.children:
                stack.extend(node.children.values())
            else:
                leaves.append(node)
        return leaves

    def _evict(self):
        # Only a leaf may go: an inner token's followers would be stranded, unmatchable.
        victim = min(self._leaves(), key=lambda n: n.last_used)
        del victim.parent.children[victim.token]
        self.size -= 1

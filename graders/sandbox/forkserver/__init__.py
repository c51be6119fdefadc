"""The fork server, run as `python -m graders.sandbox.forkserver`.

`__main__` is its start-up (arguments, the user namespace, warm-up, the layer probe);
`server.ForkServer` is the server itself: the loop that forks, isolates and watches one child
per submission. What a child does once forked is graders/sandbox/child_side.py.
"""

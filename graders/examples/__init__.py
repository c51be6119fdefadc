"""The challenge page's Run: visible example tests and a custom input, apart from the hidden battery.

    spec_for(slug).to_json()                       the examples and the custom-input schema
    run_examples(slug, code, custom) -> RunResult  run them in the sandbox (graders/examples/run.py)

One module per family of challenges builds the inputs and names the outputs compared:
attention.py, caches.py, kernels.py, functions.py (the challenges whose entry points are plain
functions), model.py, processors.py, scheduling.py; spec.py and compare.py are what they share.
"""

from __future__ import annotations

from graders.examples.registry import RUN_SPECS, spec_for
from graders.examples.spec import InvalidRunInput

__all__ = ["RUN_SPECS", "InvalidRunInput", "spec_for"]

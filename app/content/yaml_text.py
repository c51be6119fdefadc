"""YAML as the bank reads it: PyYAML's safe loader, in libyaml's C implementation where PyYAML was
built with it (the manylinux wheels are). The pure-Python scanner was four fifths of loading the
bank (2 s of 2.4 s cold, 0.4 s of 0.5 s warm, 215 cards and 23 challenges), and every app start,
every `kvprep check-content` and every test app pays it. Both loaders accept the same documents and
build the same objects; their errors carry the same line and column marks.
"""

from __future__ import annotations

from typing import Any

import yaml

SafeLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_yaml(text: str) -> Any:
    """One YAML document, safely (no arbitrary Python objects), as PyYAML's safe_load gives it."""
    return yaml.load(text, Loader=SafeLoader)  # noqa: S506 - a safe loader, C or Python

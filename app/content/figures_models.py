"""Model-side figures of the serving loop: speculative decoding, quantization, MLA, parallelism, MoE.

Merged into app.content.figures.compute_figures(); a name defined twice is an error.
"""

from __future__ import annotations


def figures() -> dict[str, str]:
    """name -> the exact text a card must print for that figure."""
    f: dict[str, str] = {}
    return f

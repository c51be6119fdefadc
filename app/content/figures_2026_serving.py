"""Figures of the 2026 topics, part two (serving at scale); see figures_2026.py for part one."""

from __future__ import annotations


def figures() -> dict[str, str]:
    return {}

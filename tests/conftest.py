"""Fixtures shared by the whole suite.

Torch runs single-threaded everywhere in the tests: two multi-threaded torch
processes on a 2-core machine slow each other down by an order of magnitude.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import torch  # noqa: E402

torch.set_num_threads(1)

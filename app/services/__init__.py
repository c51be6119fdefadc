"""The logic routes call: content sync, the grading queue, ..."""

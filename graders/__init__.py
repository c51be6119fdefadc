"""Graders for kvprep's coding challenges: reference code, checks and the sandbox."""

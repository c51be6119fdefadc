"""kvprep: an interview trainer for LLM inference."""

"""kvprep's own reference implementations: the answers every check compares against."""

"""The question bank: card schema, loading and validation, and the figures cards quote."""

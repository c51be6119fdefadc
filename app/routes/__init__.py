"""One module per resource; each exposes `router` (and `pages` for HTML where it has pages)."""

"""`kvprep bench grader` (app.bench.grader) and `kvprep bench pages` (app.bench.pages)."""

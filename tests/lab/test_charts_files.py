"""kvprep lab --charts: a chart file per experiment; a series marked for the right axis gets its own
axis, labelled, so tokens/s and ms per token never share one scale."""

from __future__ import annotations

from pathlib import Path

from app.lab.cli import write_charts


def test_a_right_axis_series_gets_its_own_labelled_axis(tmp_path: Path) -> None:
    result = {
        "experiments": {
            "batching": {
                "title": "Batching",
                "series": [
                    {"label": "tokens/s (all users)", "points": [[1, 2353.4], [4, 7771.7]]},
                    {"label": "ms per token", "points": [[1, 0.42], [4, 0.51]], "axis": "right"},
                ],
                "x_label": "batch size",
                "x_integer": True,
                "y_label": "tokens/s (all users)",
                "y2_label": "ms per token (one user)",
            }
        }
    }
    (path,) = write_charts(result, tmp_path, "svg")
    svg = path.read_text()
    assert "ms per token (one user)" in svg and "tokens/s (all users)" in svg
    # matplotlib writes each text as a comment beside its glyphs: batch sizes are whole numbers only.
    assert "<!-- 2 -->" in svg and "<!-- 1.5 -->" not in svg

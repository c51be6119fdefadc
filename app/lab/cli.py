"""`kvprep lab`: run the experiments here, print the table with the seed's figures, write the charts.

kvprep lab                          # GPT-2 small, every experiment (a minute or two)
kvprep lab --size tiny -e decode    # a tiny model, one experiment
kvprep lab --charts out/ --format svg
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from app.lab.experiments import EXPERIMENTS, Plan
from app.lab.runner import SIZES, LabTimeout, run_plan

BAR_WIDTH = 30


def _progress_bar(fraction: float, message: str) -> None:
    filled = int(fraction * BAR_WIDTH)
    bar = "#" * filled + "-" * (BAR_WIDTH - filled)
    sys.stderr.write(f"\r[{bar}] {fraction * 100:5.1f}% {message[:60]:<60}")
    sys.stderr.flush()


def format_table(result: dict[str, Any]) -> str:
    """Every experiment's rows as aligned text, with the seed's figure where there is one."""
    lines: list[str] = []
    for name, ex in result["experiments"].items():
        lines.append(f"\n== {ex.get('title', name)} ==")
        rows = ex.get("rows", [])
        if rows:
            keys = list(rows[0])
            widths = [max(len(k), *(len(_cell(r[k])) for r in rows)) for k in keys]
            lines.append("  ".join(k.ljust(w) for k, w in zip(keys, widths, strict=True)))
            for r in rows:
                lines.append("  ".join(_cell(r[k]).ljust(w) for k, w in zip(keys, widths, strict=True)))
        if "speedup" in ex and ex["speedup"]["measured"]:
            s = ex["speedup"]
            lines.append(
                f"speed-up after {s['cached_tokens']} tokens: {s['measured']}x (seed: about {s['seed']}x)"
            )
        for check, ok in ex.get("checks", {}).items():
            lines.append(f"{check}: {'yes' if ok else 'NO'}")
        if "seed" in ex:
            lines.append(f"seed: {ex['seed']}")
    return "\n".join(lines)


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:,.2f}"
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else str(value)


def write_charts(result: dict[str, Any], folder: Path, fmt: str) -> list[Path]:
    """One chart per experiment with series: lines for this machine, crosses for the seed's points."""
    import matplotlib

    matplotlib.use("Agg")  # no screen: files only
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, ex in result["experiments"].items():
        if not ex.get("series"):
            continue
        fig, ax = plt.subplots(figsize=(7, 4.2))
        right = ax.twinx() if any(s.get("axis") == "right" for s in ex["series"]) else None
        for i, series in enumerate(ex["series"]):
            xs, ys = zip(*series["points"], strict=True) if series["points"] else ((), ())
            on = right if right is not None and series.get("axis") == "right" else ax
            on.plot(xs, ys, marker="o", label=series["label"], color=f"C{i}")
        if right is not None:
            right.set_ylabel(ex.get("y2_label", ""))
            right.set_ylim(bottom=0)
            right.legend(loc="upper right")
        if ex.get("x_integer"):
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        if ex.get("seed_points"):
            sx, sy = zip(*ex["seed_points"], strict=True)
            ax.scatter(
                sx, sy, marker="x", s=90, color="black", zorder=5, label="seed (GPT-2 small, our CPU run)"
            )
        ax.set_title(ex.get("title", name))
        ax.set_xlabel(ex.get("x_label", ""))
        ax.set_ylabel(ex.get("y_label", ""))
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(loc="upper left")
        path = folder / f"{name}.{fmt}"
        fig.tight_layout()
        fig.savefig(path, format=fmt)
        plt.close(fig)
        written.append(path)
    return written


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="kvprep lab", description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument(
        "--size", choices=list(SIZES), default="full", help="full: GPT-2 small; tiny: seconds"
    )
    parser.add_argument("-e", "--experiment", action="append", choices=list(EXPERIMENTS), help="repeatable")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    parser.add_argument("--time-limit", type=float, default=900.0, help="seconds before the run stops")
    parser.add_argument("--charts", type=Path, help="folder to write one chart per experiment into")
    parser.add_argument("--format", choices=["svg", "png"], default="svg", help="chart format (default svg)")
    parser.add_argument("--json", type=Path, help="also write the raw results as JSON")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)
    config, plan = SIZES[args.size]
    plan = Plan(**{**plan.__dict__, "experiments": tuple(args.experiment or ())})
    try:
        result = run_plan(
            config,
            plan,
            progress=None if args.quiet else _progress_bar,
            threads=args.threads,
            time_limit_s=args.time_limit,
        )
    except LabTimeout as exc:
        print(f"\nkvprep lab: {exc}", file=sys.stderr)
        return 1
    if not args.quiet:
        sys.stderr.write("\n")
    print(format_table(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    if args.charts:
        for path in write_charts(result, args.charts, args.format):
            print(f"wrote {path}")
    return 0

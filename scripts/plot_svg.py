#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Line plots (SVG) of `ito-bench ... --json` rows, with no dependency beyond Python 3.

Reads JSON lines (one object per row, as `ito-bench --json` prints them; other lines
are skipped), keeps the rows of one benchmark, and draws one line per system (the
row's `impl`, less the rank count the distributed rows add to it):
x = worker count (or a parameter such as `ranks`), y = ns/op, the median ms, or the
speed-up over the series' own smallest x.

  ito-bench fib --n 30 --workers 1,2 --json > fib.json
  scripts/plot_svg.py fib.json --bench fib -o docs/img/fib_workers.svg
  scripts/plot_svg.py fib.json --bench fib --y speedup -o docs/img/fib_speedup.svg
  scripts/plot_svg.py dist.json --bench dist-fib --x ranks --y median_ms -o ranks.svg
"""
import argparse
import json
import math
import re
import sys
from html import escape

COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b",
           "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"]
Y_LABELS = {"ns_per_op": "ns per operation (median)", "median_ms": "median time (ms)",
            "speedup": "speed-up over the series' fewest workers/ranks"}


def read_rows(paths):
    rows = []
    for path in paths:
        with (sys.stdin if path == "-" else open(path)) as f:
            for line in f:
                line = line.strip()
                if not line.startswith("{"):
                    continue
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError:
                    continue
    return rows


def x_of(row, key):
    if key == "workers":
        return float(row.get("workers", 0))
    value = row.get("params", {}).get(key)
    return None if value is None else float(value)


def series_name(row):
    # the distributed rows name their rank count ("..., 4 rank(s)"): one series per mode
    return re.sub(r", \d+ rank\(s\)$", "", row["impl"])


def collect(rows, bench, xkey, ykey, only, group):
    series = {}  # name -> {x: y}
    for row in rows:
        if row.get("bench") != bench or not row.get("available", True):
            continue
        if only and not any(s in row["impl"] for s in only):
            continue
        if group and group not in row.get("group", ""):
            continue
        x = x_of(row, xkey)
        y = row.get("median_ms" if ykey == "speedup" else ykey)
        if x is None or y is None:
            continue
        series.setdefault(series_name(row), {})[x] = float(y)
    if ykey == "speedup":
        for name, points in series.items():
            base = points[min(points)]
            series[name] = {x: base / y for x, y in points.items() if y > 0}
    return {k: sorted(v.items()) for k, v in series.items() if v}


def nice_ticks(lo, hi, count=5):
    if hi <= lo:
        hi = lo + 1
    raw = (hi - lo) / count
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.floor(lo / step) * step
    ticks, t = [], first
    while True:  # up to the first tick at or above hi, so every point is inside the frame
        ticks.append(round(t, 10))
        if t >= hi - step * 1e-9:
            return ticks
        t += step


def fmt(v):
    if v == 0:
        return "0"
    if abs(v) >= 1000 or abs(v) < 0.01:
        return f"{v:.3g}"
    return f"{v:g}"


def render(series, title, xlabel, ylabel, logy, note="", width=760, height=440):
    left, right, top, bottom = 80, 20, 50, 60
    legend_h = 18 * len(series) + 10
    height += legend_h
    pw, ph = width - left - right, height - top - bottom - legend_h
    xs = sorted({x for pts in series.values() for x, _ in pts})
    ys = [y for pts in series.values() for _, y in pts]
    if logy:
        ys = [y for y in ys if y > 0]
        lo, hi = math.floor(math.log10(min(ys))), math.ceil(math.log10(max(ys)))
        if hi == lo:
            hi += 1
        yticks = [10.0 ** e for e in range(lo, hi + 1)]
        ymap = lambda y: top + ph - (math.log10(y) - lo) / (hi - lo) * ph  # noqa: E731
    else:
        yticks = nice_ticks(0, max(ys) * 1.05)
        ytop = yticks[-1]
        ymap = lambda y: top + ph - y / ytop * ph  # noqa: E731
    xlo, xhi = min(xs), max(xs)
    span = (xhi - xlo) or 1
    xmap = lambda x: left + (x - xlo) / span * pw if xhi > xlo else left + pw / 2  # noqa: E731

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{width / 2}" y="20" text-anchor="middle" font-size="15">{escape(title)}</text>',
           f'<text x="{width / 2}" y="38" text-anchor="middle" font-size="11" fill="#555">{escape(note)}</text>']
    for t in yticks:
        y = ymap(t)
        out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{left + pw}" y2="{y:.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{fmt(t)}</text>')
    for x in xs:
        px = xmap(x)
        out.append(f'<line x1="{px:.1f}" y1="{top + ph}" x2="{px:.1f}" y2="{top + ph + 5}" stroke="black"/>')
        out.append(f'<text x="{px:.1f}" y="{top + ph + 18}" text-anchor="middle">{fmt(x)}</text>')
    out.append(f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="black"/>')
    out.append(f'<text x="{left + pw / 2}" y="{top + ph + 40}" text-anchor="middle">{escape(xlabel)}</text>')
    out.append(f'<text transform="translate(18,{top + ph / 2}) rotate(-90)" text-anchor="middle">'
               f'{escape(ylabel)}{" (log scale)" if logy else ""}</text>')
    for i, (name, pts) in enumerate(sorted(series.items())):
        colour = COLOURS[i % len(COLOURS)]
        coords = " ".join(f"{xmap(x):.1f},{ymap(y):.1f}" for x, y in pts if not logy or y > 0)
        out.append(f'<polyline points="{coords}" fill="none" stroke="{colour}" stroke-width="2"/>')
        for x, y in pts:
            if not logy or y > 0:
                out.append(f'<circle cx="{xmap(x):.1f}" cy="{ymap(y):.1f}" r="3.5" fill="{colour}">'
                           f'<title>{escape(name)}: {fmt(y)}</title></circle>')
        ly = top + ph + 55 + 18 * i
        out.append(f'<line x1="{left}" y1="{ly}" x2="{left + 24}" y2="{ly}" stroke="{colour}" stroke-width="2"/>')
        out.append(f'<text x="{left + 30}" y="{ly + 4}">{escape(name)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("inputs", nargs="+", help="JSON-lines files ('-' for stdin)")
    ap.add_argument("--bench", required=True, help="the rows' `bench` field, e.g. fib")
    ap.add_argument("--x", default="workers", help="workers, or a parameter such as ranks")
    ap.add_argument("--y", default="ns_per_op", choices=sorted(Y_LABELS))
    ap.add_argument("--only", default="", help="comma-separated substrings of impl to keep")
    ap.add_argument("--group", default="", help="keep rows whose group contains this")
    ap.add_argument("--logy", action="store_true")
    ap.add_argument("--title", default="")
    ap.add_argument("--note", default="", help="a smaller second line: machine, date, tree")
    ap.add_argument("-o", "--output", required=True)
    args = ap.parse_args()
    only = [s for s in args.only.split(",") if s]
    series = collect(read_rows(args.inputs), args.bench, args.x, args.y, only, args.group)
    if not series:
        sys.exit(f"plot_svg.py: no rows of bench '{args.bench}' with x={args.x}, y={args.y}")
    xlabel = "workers" if args.x == "workers" else args.x
    svg = render(series, args.title or args.bench, xlabel, Y_LABELS[args.y], args.logy, args.note)
    with open(args.output, "w") as f:
        f.write(svg)


if __name__ == "__main__":
    main()

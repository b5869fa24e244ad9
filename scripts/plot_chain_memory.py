#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Plots chain's peak stack memory against the block size, lazy vs fair_use.

Reads the text table(s) that `ito-bench-split chain` prints (the notes column
holds peak_stack_MB=...), one file per depth, and writes a PNG.
Needs Debian's python3-matplotlib (hence /usr/bin/python3).

  ito-bench-split chain --depth 60000 --block 8K,64K,1M,64M > chain60000.txt
  scripts/plot_chain_memory.py chain60000.txt [chain125.txt] -o chain_memory.png
"""
import argparse
import re
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROW = re.compile(r"^chain\s+depth=(\d+)\s+block=(\S+)\s+\d+\s+ito (lazy|fair_use)\s.*peak_stack_MB=([0-9.e+]+)")


def block_bytes(text):
    units = {"K": 1 << 10, "M": 1 << 20}
    return int(text[:-1]) * units[text[-1]] if text[-1] in units else int(text)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tables", nargs="+")
    parser.add_argument("-o", "--output", default="chain_memory.png")
    args = parser.parse_args()
    series = {}  # (depth, policy) -> [(block, MB)]
    for path in args.tables:
        with open(path) as f:
            for line in f:
                m = ROW.match(line)
                if m:
                    depth, block, policy, mb = m.groups()
                    series.setdefault((int(depth), policy), []).append((block_bytes(block), float(mb)))
    if not series:
        sys.exit("no chain rows with peak_stack_MB found")
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for (depth, policy), points in sorted(series.items()):
        points.sort()
        ax.plot([p[0] / 1024 for p in points], [p[1] for p in points],
                marker="o" if policy == "fair_use" else "s",
                linestyle="-" if policy == "fair_use" else "--",
                label=f"{policy}, depth {depth}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("block size (KiB)")
    ax.set_ylabel("peak bytes in stack blocks (MB)")
    ax.set_title("chain (seed 000, listing 4.2), 2 workers")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(args.output, dpi=110)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()

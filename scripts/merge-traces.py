#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Merges ITO_TRACE files into one, for Perfetto or chrome://tracing: the
traces of a distributed job's ranks (one file per rank), whose stamps are the
host's CLOCK_MONOTONIC, so the ranks of one host line up on one timeline and
each message between them is an arrow from its sender's track to its
receiver's. With --ranks (files given in rank order) tracks are named
"rank R: <thread>"; with --latency it also prints, per message type, how long
messages took from send to receipt (ranks on one host only: other hosts'
clocks differ).

  mpiexec -n 1 -env ITO_TRACE r0.json ./prog : -n 1 -env ITO_TRACE r1.json ./prog
  scripts/merge-traces.py --ranks --latency merged.json r0.json r1.json"""
import json
import sys


def percentile(values, p):
    return values[min(len(values) - 1, int(len(values) * p))]


def print_latencies(events):
    sent, received, names = {}, {}, {}
    for e in events:
        if e.get("cat") != "message":
            continue
        if e["ph"] == "s":
            sent[e["id"]] = e["ts"]
        elif e["ph"] == "f":
            received[e["id"]] = e["ts"]
        elif e["ph"] == "X" and e["name"].startswith("send "):
            a = e["args"]
            names[f"{a['from_rank']}.{a['to_rank']}.{a['number']}"] = e["name"].split()[1]
    by_type = {}
    for key, t in sent.items():
        if key in received:
            by_type.setdefault(names.get(key, "message"), []).append(received[key] - t)
    every = sorted(x for v in by_type.values() for x in v)
    print("message latency, microseconds (send to receipt):")
    print(f"  {'type':<16}{'count':>7}{'median':>9}{'p75':>9}{'p90':>9}{'max':>10}")
    rows = sorted(by_type.items()) + ([("all", every)] if every else [])
    for name, values in rows:
        values = sorted(values)
        print(f"  {name:<16}{len(values):>7}{percentile(values, 0.5):>9.1f}"
              f"{percentile(values, 0.75):>9.1f}{percentile(values, 0.9):>9.1f}{values[-1]:>10.1f}")


def main(argv):
    flags = {a for a in argv[1:] if a.startswith("--")}
    args = [a for a in argv[1:] if not a.startswith("--")]
    unknown = flags - {"--ranks", "--latency"}
    if unknown or len(args) < 2:
        sys.stderr.write("usage: merge-traces.py [--ranks] [--latency] OUT.json IN.json...\n")
        return 2
    out, inputs = args[0], args[1:]
    events = []
    for rank, path in enumerate(inputs):
        with open(path) as f:
            trace = json.load(f)
        for e in trace["traceEvents"]:
            if "--ranks" in flags and e.get("ph") == "M" and e.get("name") == "thread_name":
                e["args"]["name"] = f"rank {rank}: {e['args']['name']}"
            events.append(e)
    with open(out, "w") as f:
        json.dump({"displayTimeUnit": "ns", "traceEvents": events}, f)
    if "--latency" in flags:
        print_latencies(events)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

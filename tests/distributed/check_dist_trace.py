#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Runs a distributed program at 2 ranks with a trace file per rank and checks
what ITO_TRACE promises a distributed job: every message a rank received is
one the other rank's trace shows it sending (same id), received no earlier
than it was sent (one host, one clock: CLOCK_MONOTONIC), and
scripts/merge-traces.py joins the files and prints the latencies.
Usage: check_dist_trace.py MPIEXEC PROGRAM MERGE_SCRIPT"""
import json
import os
import subprocess
import sys
import tempfile

mpiexec, program, merge = sys.argv[1:4]
with tempfile.TemporaryDirectory() as d:
    paths = [os.path.join(d, f"r{r}.json") for r in range(2)]
    # Each rank's own variables: MPICH's hydra says `-env NAME VALUE`, Open
    # MPI's mpirun `-x NAME=VALUE`.
    version = subprocess.run([mpiexec, "--version"], capture_output=True, text=True).stdout
    if "Open MPI" in version or "OpenRTE" in version:
        env = lambda name, value: ["-x", f"{name}={value}"]
    else:
        env = lambda name, value: ["-env", name, value]
    command = ([mpiexec, "-n", "1"] + env("ITO_TRACE", paths[0]) + env("ITO_WORKERS", "1") + [program, ":",
               "-n", "1"] + env("ITO_TRACE", paths[1]) + env("ITO_WORKERS", "1") + [program])
    subprocess.run(command, check=True, timeout=240)
    traces = []
    for path in paths:
        with open(path) as f:
            traces.append(json.load(f)["traceEvents"])  # raises on anything that is not JSON
    merged = subprocess.run([sys.executable, merge, "--ranks", "--latency", os.path.join(d, "m.json")] + paths,
                            check=True, capture_output=True, text=True, timeout=120).stdout

sent, received = {}, {}
for rank, events in enumerate(traces):
    names = {e["args"]["name"] for e in events if e["ph"] == "M"}
    assert "ito-progress" in names, (rank, names)
    for e in events:
        if e.get("cat") != "message":
            continue
        if e["ph"] == "s":
            assert e["id"].startswith(f"{rank}."), e  # "from.to.number"
            sent[e["id"]] = e["ts"]
        elif e["ph"] == "f":
            assert e["id"].split(".")[1] == str(rank), e
            received[e["id"]] = e["ts"]
# A rank's trace covers its runtime: a message it answered before its own
# runtime started (a steal request refused) is received by the other rank,
# but sent before the sender's trace began. A message's number counts those
# its sender sent that receiver, in order (MPI keeps it), so such a message
# comes before the first send the sender's trace has to that receiver. (Its
# receive time says nothing: it may wait in MPI's queue past the sender's
# start; CI saw that.)
first_traced = {}
for key in sent:
    pair, number = key.rsplit(".", 1)
    first_traced[pair] = min(first_traced.get(pair, int(number)), int(number))
matched = 0
for key, at in received.items():
    pair, number = key.rsplit(".", 1)
    if key not in sent:
        assert pair not in first_traced or int(number) < first_traced[pair], \
            f"message {key} was received but its sender's trace has no send, and has later ones"
        continue
    assert at >= sent[key] - 1.0, f"message {key} received at {at}, sent at {sent[key]}"
    matched += 1
assert matched >= 2, f"too few messages traced at both ends: {received}"
assert "  all " in merged, merged
print(f"dist trace ok: {len(sent)} sent, {len(received)} received, {matched} matched at both ends")

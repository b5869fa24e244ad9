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
    command = [mpiexec, "-n", "1", "-env", "ITO_TRACE", paths[0], "-env", "ITO_WORKERS", "1", program,
               ":", "-n", "1", "-env", "ITO_TRACE", paths[1], "-env", "ITO_WORKERS", "1", program]
    subprocess.run(command, check=True, timeout=240)
    traces = []
    for path in paths:
        with open(path) as f:
            traces.append(json.load(f)["traceEvents"])  # raises on anything that is not JSON
    merged = subprocess.run([sys.executable, merge, "--ranks", "--latency", os.path.join(d, "m.json")] + paths,
                            check=True, capture_output=True, text=True, timeout=120).stdout

sent, received = {}, {}
# A rank's trace covers its runtime: a message it answered before its own
# runtime started (a steal request refused) is received by the other rank,
# but sent before the sender's trace began.
trace_start = [min(e["ts"] for e in events if e.get("ph") == "X") for events in traces]
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
matched = 0
for key, at in received.items():
    sender = int(key.split(".")[0])
    if key not in sent:
        assert at < trace_start[sender], f"message {key} was received but its sender's trace has no send"
        continue
    assert at >= sent[key] - 1.0, f"message {key} received at {at}, sent at {sent[key]}"
    matched += 1
assert matched >= 2, f"too few messages traced at both ends: {received}"
assert "  all " in merged, merged
print(f"dist trace ok: {len(sent)} sent, {len(received)} received, {matched} matched at both ends")

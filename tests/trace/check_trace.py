#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Runs a program with ITO_TRACE and checks that the trace is JSON that
Perfetto and chrome://tracing accept: a traceEvents list, named threads,
complete slices with non-negative times, one track per OS thread. Usage: check_trace.py PROGRAM [ARGS]"""
import json
import os
import subprocess
import sys
import tempfile

with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "trace.json")
    env = dict(os.environ, ITO_TRACE=path, ITO_WORKERS="2")
    subprocess.run(sys.argv[1:], env=env, check=True, timeout=120)
    with open(path) as f:
        trace = json.load(f)  # raises on anything that is not JSON
events = trace["traceEvents"]
names = {e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
slices = [e for e in events if e["ph"] == "X"]
# Every thread with events is named. (Which threads have events depends on
# timing: a worker that never stole a ULT in a short run records nothing.)
named = {e["tid"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
active = {e["tid"] for e in events if e["ph"] != "M"}
assert active <= named, (active - named, names)
# One track per OS thread: a thread's records go to one buffer, a ULT with a
# TLS block of its own (ITO_ULT_TLS) included, which records into its
# worker's, not a buffer of its own.
track_names = [e["tid"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"]
assert len(track_names) == len(named), f"an OS thread has several tracks: {sorted(track_names)}"
assert names, "no thread is named"
assert slices, "no slices"
for e in slices:
    assert e["ts"] >= 0 and e["dur"] >= 0, e
    assert isinstance(e["pid"], int) and isinstance(e["tid"], int), e
ults = sum(1 for e in slices if e["cat"] == "ult")
print(f"trace ok: {len(events)} events, {ults} ULT slices, threads {sorted(names)}")

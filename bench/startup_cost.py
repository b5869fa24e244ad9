#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""What a process pays to start under libito-preload.so (issue 24, item 11):
each program is spawned RUNS times plain and RUNS times with
LD_PRELOAD=<library>, alternating, and the median wall time of spawn to
exit is printed for each, with the difference; then the same for the CPU
time the child used (user + system, from wait4), which a loaded machine
disturbs less than the wall time.
  bench/startup_cost.py build/release/src/preload/libito-preload.so [runs]
Extra libraries to compare (e.g. libstdc++ alone, or a copy of the library
built before a change) may follow as --also=PATH; each is preloaded on its
own the same way. The load average is printed before and after: the
machine is shared, and a busy one stretches every median.
"""
import os
import shutil
import statistics
import sys
import time

def spawn_ms(argv, env):
    """(wall ms, child CPU ms) of one run."""
    start = time.perf_counter_ns()
    pid = os.posix_spawn(argv[0], argv, env)
    _, status, usage = os.wait4(pid, 0)
    took = (time.perf_counter_ns() - start) / 1e6
    if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
        sys.exit(f"{argv} {env.get('LD_PRELOAD', '(plain)')}: status {status}")
    return took, (usage.ru_utime + usage.ru_stime) * 1e3

def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--also=")]
    also = [a[len("--also="):] for a in sys.argv[1:] if a.startswith("--also=")]
    usage = "usage: startup_cost.py LIBRARY [runs] [--also=LIBRARY]..."
    if args and args[0] in ("-h", "--help"):
        print(usage + "\n\n" + __doc__.strip())
        return
    if not args:
        sys.exit(usage)
    library = os.path.abspath(args[0])
    runs = int(args[1]) if len(args) > 1 else 300
    programs = [["/bin/true"], ["/bin/bash", "-c", ":"]]
    python3 = shutil.which("python3", path="/usr/bin:/bin")
    if python3:
        programs.append([python3, "-c", "pass"])
    base = {k: v for k, v in os.environ.items() if not k.startswith(("LD_PRELOAD", "ITO_"))}
    variants = [("plain", None), ("preload", library)] + [(os.path.basename(p), os.path.abspath(p)) for p in also]
    print("load average %.2f %.2f %.2f" % os.getloadavg())
    print(f"{'program':24} {'':4} " + " ".join(f"{name:>14}" for name, _ in variants) + "   preload-plain  (median ms, "
          f"{runs} runs each, alternating)")
    for argv in programs:
        times = {name: [] for name, _ in variants}
        cpu = {name: [] for name, _ in variants}
        for _ in range(3):  # warm the page cache
            for name, lib in variants:
                spawn_ms(argv, dict(base, **({"LD_PRELOAD": lib} if lib else {})))
        for i in range(runs):
            order = variants if i % 2 == 0 else list(reversed(variants))
            for name, lib in order:
                wall, used = spawn_ms(argv, dict(base, **({"LD_PRELOAD": lib} if lib else {})))
                times[name].append(wall)
                cpu[name].append(used)
        for what, samples in (("wall", times), ("cpu", cpu)):
            med = {name: statistics.median(t) for name, t in samples.items()}
            print(f"{' '.join(argv):24} {what:4} " + " ".join(f"{med[name]:14.3f}" for name, _ in variants)
                  + f"   {med['preload'] - med['plain']:+13.3f}")
    print("load average %.2f %.2f %.2f" % os.getloadavg())

if __name__ == "__main__":
    main()

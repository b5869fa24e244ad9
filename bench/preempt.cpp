// SPDX-License-Identifier: Apache-2.0
// `ito-bench preempt`: how late a sleeping thread runs again while busy
// threads share its CPU. bench/preempt/wake_latency.c, a plain pthread
// program, runs pinned to one CPU twice per round: as it is (NPTL: the
// kernel's scheduler preempts the busy threads) and under libito-preload.so
// at ITO_WORKERS=1 (ito's preemption: preempt.hpp). Each run samples the main
// thread's wake lateness; the rows give the median over runs of each run's
// median, p90 and max. Rounds alternate the two systems.
#include <sched.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "harness.hpp"

namespace bench {
namespace {

struct preempt_params {
  int samples = 100;
  long long sleep_us = 2000;
  int busy = 1;
  long long slice_us = 10'000;
  int runs = 5;
};

struct lateness {
  double median_us = 0, p90_us = 0, max_us = 0;
};

// The first CPU this process may use: both systems run there alone.
int first_allowed_cpu() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 0;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &set)) return cpu;
  return 0;
}

bool run_once(const std::string& env, const preempt_params& p, lateness* out) {
  const std::string cmd = "env " + env + " taskset -c " + std::to_string(first_allowed_cpu()) +
                          " '" ITO_BENCH_WAKE_LATENCY "' " + std::to_string(p.samples) + " " +
                          std::to_string(p.sleep_us) + " " + std::to_string(p.busy);
  FILE* f = popen(cmd.c_str(), "r");
  if (!f) return false;
  const int got = std::fscanf(f, "%lf %lf %lf", &out->median_us, &out->p90_us, &out->max_us);
  return pclose(f) == 0 && got == 3;
}

result row(const preempt_params& p, const std::string& impl, const std::vector<lateness>& runs) {
  result r;
  r.bench = "preempt";
  r.group = "busy=" + std::to_string(p.busy) + " sleep=" + std::to_string(p.sleep_us) + "us";
  r.impl = impl;
  r.workers = 1;
  r.params = {{"samples", std::to_string(p.samples)}, {"sleep_us", std::to_string(p.sleep_us)},
              {"busy", std::to_string(p.busy)}, {"slice_us", std::to_string(p.slice_us)}};
  r.reference = impl.rfind("ito", 0) == 0;
  r.peak_rss_kb = -1;
  std::vector<double> med, p90, max;
  for (const lateness& l : runs) {
    med.push_back(l.median_us);
    p90.push_back(l.p90_us);
    max.push_back(l.max_us);
  }
  std::vector<std::int64_t> ns;
  for (double m : med) ns.push_back(static_cast<std::int64_t>(m * 1000));
  r.ops = 1;
  summarize(r, ns);
  r.extra = {{"p90_us", median(p90)}, {"max_us", median(max)}};
  r.note = "wake lateness: median of run medians (p90 " + std::to_string(int(median(p90))) +
           " us, max " + std::to_string(int(median(max))) + " us)";
  return r;
}

}  // namespace

void preempt_command(args& a, const common_flags& c, reporter& out) {
  preempt_params p;
  p.samples = static_cast<int>(a.take_int("--samples", p.samples, 1, 100'000));
  p.sleep_us = a.take_int("--sleep-us", p.sleep_us, 1, 10'000'000);
  p.busy = static_cast<int>(a.take_int("--busy", p.busy, 0, 64));
  p.slice_us = a.take_int("--slice-us", p.slice_us, 100, 1'000'000);
  a.finish();
  if (!c.workers.empty()) throw usage_error("preempt: --workers does not apply (one CPU, one worker)");
  p.runs = c.runs;
  const std::string ito_env = "ITO_WORKERS=1 ITO_PREEMPT=" + std::to_string(p.slice_us) +
                              " LD_PRELOAD='" ITO_BENCH_PRELOAD_LIB "'";
  std::vector<lateness> nptl, ito;
  for (int i = 0; i < p.runs; ++i) {
    progress("preempt, round %d of %d...", i + 1, p.runs);
    lateness l;
    if (selected("NPTL") && run_once("ITO_UNUSED=1", p, &l)) nptl.push_back(l);
    if (selected("ito") && run_once(ito_env, p, &l)) ito.push_back(l);
  }
  const std::string ito_name =
      "ito (preload), 1 worker, slice " + std::to_string(p.slice_us) + " us";
  if (selected("ito")) {
    if (ito.empty()) out.add(not_available("preempt", "", ito_name, 1, "the program failed"));
    else out.add(row(p, ito_name, ito));
  }
  if (selected("NPTL")) {
    if (nptl.empty()) out.add(not_available("preempt", "", "NPTL, 1 CPU", 1, "the program failed"));
    else out.add(row(p, "NPTL, 1 CPU", nptl));
  }
  out.print_table("preempt: how late a sleeping thread runs beside busy ones on one CPU");
}

}  // namespace bench

// SPDX-License-Identifier: Apache-2.0
// `ito-bench dist-fib`, `dist-sort` and `dist-stencil`: a kernel on the
// distributed scheduler at 1, 2 and 4 ranks, each rank count in both memory
// modes (mpi_launch.hpp; `mpiexec -n R ito-bench-dist-<kernel>`, built beside
// this executable), against the same kernel in this process at the same
// worker counts (dist_one_process.hpp). fib's rows time one whole
// start_main_thread (the runtime's start and end included, in both); sort's
// the sort alone, the stencil's its sweeps (data in the DSM, or plain
// memory). The distributed rows carry their time over the 1-rank time of
// the same mode and over the one-process time, then the ULTs that moved,
// the steal requests, the joins answered by another process, the stack
// bytes moved and the fences (medians over the runs, summed over the ranks).
#include <cstdio>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "benchmarks.hpp"
#include "dist_one_process.hpp"

namespace bench {
namespace {

#if defined(ITO_BENCH_MPIEXEC)
constexpr bool built_with_mpi = true;
#else
constexpr bool built_with_mpi = false;
#endif

const char* name_of(dist_kernel k) {
  return k == dist_kernel::fib ? "fib" : k == dist_kernel::sort ? "sort" : "stencil";
}

result row(const dist_params& p, std::string impl, unsigned w) {
  result r;
  r.bench = std::string("dist-") + name_of(p.kernel);
  r.group = "n=" + std::to_string(p.n);
  r.impl = std::move(impl);
  r.workers = w;
  r.params = {{"n", std::to_string(p.n)}};
  if (p.kernel == dist_kernel::fib) {
    r.ops = static_cast<double>(fib_value(static_cast<int>(p.n) + 1) - 1);  // calls
  } else if (p.kernel == dist_kernel::sort) {
    r.ops = static_cast<double>(p.n);
  } else {
    r.group += " sweeps=" + std::to_string(p.sweeps);
    r.params.emplace_back("sweeps", std::to_string(p.sweeps));
    r.ops = static_cast<double>(p.n) * static_cast<double>(p.n) * static_cast<double>(p.sweeps);
  }
  return r;
}

// One mpiexec of ito-bench-dist-<kernel>: its per-run lines into r.
void run_distributed(const dist_params& p, const node_mode& mode, unsigned ranks, unsigned w,
                     bool checkout, result& r) {
  std::string flags = "--n " + std::to_string(p.n) + " --runs " + std::to_string(p.runs);
  if (p.kernel == dist_kernel::stencil) flags += " --sweeps " + std::to_string(p.sweeps);
  if (checkout) flags += " --checkout 1";
  const std::string command =
      mpiexec_command(mode, "ITO_WORKERS=" + std::to_string(w) + " ", ranks,
                      std::string("ito-bench-dist-") + name_of(p.kernel), flags);
  const long want = p.kernel == dist_kernel::fib ? fib_value(static_cast<int>(p.n)) : 1;
  std::vector<std::int64_t> ns;
  std::vector<double> moved, requests, joins, bytes, fences;
  run_lines(command, [&](const char* line) {
    double ms = 0;
    long value = 0;
    unsigned long long m = 0, q = 0, j = 0, b = 0, f = 0;
    if (std::sscanf(line, "run %lf %ld %llu %llu %llu %llu %llu", &ms, &value, &m, &q, &j, &b,
                    &f) != 7)
      return false;
    if (value != want)
      throw std::runtime_error(r.bench + " (" + r.impl + "): wrong result " +
                               std::to_string(value) + ", expected " + std::to_string(want));
    ns.push_back(static_cast<std::int64_t>(ms * 1e6));
    moved.push_back(static_cast<double>(m));
    requests.push_back(static_cast<double>(q));
    joins.push_back(static_cast<double>(j));
    bytes.push_back(static_cast<double>(b));
    fences.push_back(static_cast<double>(f));
    return true;
  });
  if (static_cast<int>(ns.size()) != p.runs)
    throw std::runtime_error(command + ": " + std::to_string(ns.size()) + " runs reported, not " +
                             std::to_string(p.runs));
  summarize(r, ns);
  r.peak_rss_kb = -1;  // the ranks' memory is not this process's
  r.extra = {{"ults_moved", median(moved)},
             {"steal_requests", median(requests)},
             {"remote_joins", median(joins)},
             {"stack_bytes_moved", median(bytes)},
             {"fences", median(fences)}};
}

}  // namespace

void run_dist(const dist_params& p, reporter& out) {
  const std::string bench_name = std::string("dist-") + name_of(p.kernel);
  one_process local(p);
  for (unsigned w : p.workers) {
    result shared = row(p, "ito (one process)", w);
    shared.reference = true;
    shared.note = p.kernel == dist_kernel::fib ? "each run: start_main_thread, fresh runtime"
                                               : "plain memory";
    progress("%s(%ld), %u worker(s), one process...", bench_name.c_str(), p.n, w);
    unsigned run = 0;
    measure(shared, p.runs, [&] { return local.ito_run(w, run++); });
    const double one_process_ms = shared.median_ms;
    out.add(std::move(shared));
    if (p.kernel == dist_kernel::stencil) {
      result seq = row(p, "sequential loops", w);
      seq.note = "plain memory, no ULTs";
      measure(seq, p.runs, [&] { return local.sequential_run(); });
      out.add(std::move(seq));
    }
    std::map<std::string, double> one_rank_ms;  // per mode and access
    for (unsigned ranks : p.ranks) {
      for (const node_mode& mode : p.modes) {
        if (mode.env == "pair" && ranks == 2) continue;  // one node of two: as `host`
        for (const bool checkout : p.checkouts) {
          const std::string how = checkout ? ", checkout" : "";
          result r =
              row(p, "ito-dist " + mode.label + how + ", " + std::to_string(ranks) + " rank(s)", w);
          r.params.emplace_back("ranks", std::to_string(ranks));
          r.params.emplace_back("node", json_string(mode.env));
          if (p.kernel == dist_kernel::sort)
            r.params.emplace_back("access", json_string(checkout ? "checkout" : "fault"));
          if (!selected(r.impl)) continue;
          if (!built_with_mpi) {
            out.add(not_available(r.bench, r.group, r.impl, w,
                                  "built without the distributed mode (no MPI found)"));
            continue;
          }
          progress("%s(%ld), %u worker(s), %u rank(s), ITO_DIST_NODE=%s%s...", bench_name.c_str(),
                   p.n, w, ranks, mode.env.c_str(), how.c_str());
          r.note = p.kernel == dist_kernel::fib ? "each run: ito::dist::start_main_thread"
                                                : "data in the DSM";
          run_distributed(p, mode, ranks, w, checkout, r);
          const std::string shape = mode.env + how;
          if (ranks == 1) one_rank_ms[shape] = r.median_ms;
          // Times over: > 1 is slower. Listed first among the notes.
          std::vector<std::pair<std::string, double>> ratios;
          if (one_rank_ms.count(shape))
            ratios.emplace_back("x_1rank", r.median_ms / one_rank_ms[shape]);
          if (one_process_ms > 0) ratios.emplace_back("x_one_process", r.median_ms / one_process_ms);
          r.extra.insert(r.extra.begin(), ratios.begin(), ratios.end());
          out.add(std::move(r));
        }
      }
    }
  }
}

}  // namespace bench

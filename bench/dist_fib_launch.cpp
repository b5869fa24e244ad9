// SPDX-License-Identifier: Apache-2.0
// `ito-bench dist-fib` and `dist-sort`: a kernel on the distributed scheduler
// at 1, 2 and 4 ranks (each through `mpiexec -n R ito-bench-dist-fib` or
// `-dist-sort`, built beside this executable) against the same kernel on
// shared-memory ito in this process, at the same worker counts. fib's rows
// time one whole start_main_thread (the runtime's start and end included, in
// both); sort's time the sort alone (its data in the DSM, or plain memory).
// The distributed rows carry the ULTs that moved, the steal requests, the
// joins answered by another process and the stack bytes moved (medians over
// the runs, summed over the ranks).
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "benchmarks.hpp"
#include "distributed/fib_kernel.hpp"
#include "distributed/sort_kernel.hpp"
#include "ito/thread.hpp"

namespace bench {
namespace {


result row(const dist_fib_params& p, std::string impl, unsigned w) {
  result r;
  r.bench = p.sort ? "dist-sort" : "dist-fib";
  r.group = "n=" + std::to_string(p.n);
  r.impl = std::move(impl);
  r.workers = w;
  r.params = {{"n", std::to_string(p.n)}};
  r.ops = p.sort ? static_cast<double>(p.n) : static_cast<double>(fib_value(p.n + 1) - 1);
  return r;
}

#if defined(ITO_BENCH_MPIEXEC)
std::string beside_this_executable(const char* name) {
  char path[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0) return name;
  path[n] = '\0';
  std::string dir(path);
  return dir.substr(0, dir.rfind('/') + 1) + name;
}

// One mpiexec of ito-bench-dist-fib: its per-run lines into r.
void run_distributed(const dist_fib_params& p, unsigned ranks, unsigned w, result& r) {
  const std::string target =
      beside_this_executable(p.sort ? "ito-bench-dist-sort" : "ito-bench-dist-fib");
  if (access(target.c_str(), X_OK) != 0) throw std::runtime_error(target + " is missing");
  const std::string command = "ITO_WORKERS=" + std::to_string(w) + " " + ITO_BENCH_MPIEXEC +
                              " -n " + std::to_string(ranks) + " " + target + " --n " +
                              std::to_string(p.n) + " --runs " + std::to_string(p.runs) + " 2>&1";
  FILE* in = popen(command.c_str(), "r");
  if (!in) throw std::runtime_error("cannot run " + command + ": " + std::strerror(errno));
  std::vector<std::int64_t> ns;
  std::vector<double> moved, requests, joins, bytes, fences;
  std::string unexpected;
  char line[512];
  while (std::fgets(line, sizeof line, in)) {
    double ms = 0;
    long value = 0;
    unsigned long long m = 0, q = 0, j = 0, b = 0, f = 0;
    if (std::sscanf(line, "run %lf %ld %llu %llu %llu %llu %llu", &ms, &value, &m, &q, &j, &b, &f) ==
        7) {
      if (value != (p.sort ? 1 : fib_value(p.n)))
        throw std::runtime_error(p.sort ? "distributed sort: wrong result"
                                        : "distributed fib(" + std::to_string(p.n) + ") = " +
                                              std::to_string(value));
      ns.push_back(static_cast<std::int64_t>(ms * 1e6));
      moved.push_back(static_cast<double>(m));
      requests.push_back(static_cast<double>(q));
      joins.push_back(static_cast<double>(j));
      bytes.push_back(static_cast<double>(b));
      fences.push_back(static_cast<double>(f));
    } else if (unexpected.size() < 2000) {
      unexpected += line;
    }
  }
  const int status = pclose(in);
  if (status != 0 || static_cast<int>(ns.size()) != p.runs)
    throw std::runtime_error(command + " failed (status " + std::to_string(status) + "):\n" +
                             unexpected);
  summarize(r, ns);
  r.extra = {{"ults_moved", median(moved)},
             {"steal_requests", median(requests)},
             {"remote_joins", median(joins)},
             {"stack_bytes_moved", median(bytes)},
             {"fences", median(fences)}};
}
#endif

// One run of the kernel on shared-memory ito, in ns.
std::int64_t run_shared(const dist_fib_params& p, unsigned w, std::vector<int>& a,
                        std::vector<int>& tmp, unsigned run) {
  if (!p.sort) {
    const std::int64_t t0 = now_ns();
    const long v = ito::start_main_thread_with_worker_size(
        w, [&] { return ito::join(ito::create_thread(fib_kernel::fib, static_cast<int>(p.n))); });
    const std::int64_t t = now_ns() - t0;
    if (v != fib_value(p.n)) throw std::runtime_error("fib: wrong result");
    return t;
  }
  return ito::start_main_thread_with_worker_size(w, [&] {
    sort_kernel::fill(a.data(), p.n, run + 1);
    const std::uint64_t sum = sort_kernel::checksum(a.data(), p.n);
    const std::int64_t t0 = now_ns();
    sort_kernel::sort(a.data(), tmp.data(), p.n);
    const std::int64_t t = now_ns() - t0;
    if (!sort_kernel::is_sorted(a.data(), p.n) || sort_kernel::checksum(a.data(), p.n) != sum)
      throw std::runtime_error("sort: wrong result");
    return t;
  });
}

}  // namespace

void run_dist_fib(const dist_fib_params& p, reporter& out) {
  const char* name = p.sort ? "dist-sort" : "dist-fib";
  std::vector<int> a(p.sort ? static_cast<std::size_t>(p.n) : 0), tmp(a.size());
  for (unsigned w : p.workers) {
    progress("%s(%ld), %u worker(s), one process...", name, p.n, w);
    result shared = row(p, "ito (one process)", w);
    shared.reference = true;
    shared.note = p.sort ? "plain memory" : "each run: start_main_thread, fresh runtime";
    unsigned run = 0;
    measure(shared, p.runs, [&] { return run_shared(p, w, a, tmp, run++); });
    out.add(std::move(shared));
    for (unsigned ranks : p.ranks) {
      result r = row(p, "distributed, " + std::to_string(ranks) + " rank(s)", w);
#if defined(ITO_BENCH_MPIEXEC)
      progress("%s(%ld), %u worker(s), %u rank(s)...", name, p.n, w, ranks);
      r.note = p.sort ? "data in the DSM" : "each run: ito::dist::start_main_thread on every rank";
      run_distributed(p, ranks, w, r);
      out.add(std::move(r));
#else
      out.add(not_available(r.bench, r.group, r.impl, w,
                            "built without the distributed mode (no MPI found)"));
#endif
    }
  }
}

}  // namespace bench

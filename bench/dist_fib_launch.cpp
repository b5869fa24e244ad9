// SPDX-License-Identifier: Apache-2.0
// `ito-bench dist-fib`: fib(n) on the distributed scheduler at 1, 2 and 4
// ranks (each through `mpiexec -n R ito-bench-dist-fib`, built beside this
// executable) against fib(n) on shared-memory ito in this process, at the
// same worker counts. Each row times one whole start_main_thread (the
// runtime's start and end included, in both), and the distributed rows carry
// the ULTs that moved, the steal requests, the joins answered by another
// process and the stack bytes moved (medians over the runs, summed over the
// ranks).
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "benchmarks.hpp"
#include "ito/thread.hpp"

namespace bench {
namespace {

long shared_fib(int n) {
  if (n < 2) return n;
  auto a = ito::create_thread(shared_fib, n - 1);
  const long b = shared_fib(n - 2);
  return a.get() + b;
}

std::string beside_this_executable(const char* name) {
  char path[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0) return name;
  path[n] = '\0';
  std::string dir(path);
  return dir.substr(0, dir.rfind('/') + 1) + name;
}

result row(const dist_fib_params& p, std::string impl, unsigned w) {
  result r;
  r.bench = "dist-fib";
  r.group = "n=" + std::to_string(p.n);
  r.impl = std::move(impl);
  r.workers = w;
  r.params = {{"n", std::to_string(p.n)}};
  r.ops = static_cast<double>(fib_value(p.n + 1) - 1);
  return r;
}

#if defined(ITO_BENCH_MPIEXEC)
// One mpiexec of ito-bench-dist-fib: its per-run lines into r.
void run_distributed(const dist_fib_params& p, unsigned ranks, unsigned w, result& r) {
  const std::string target = beside_this_executable("ito-bench-dist-fib");
  if (access(target.c_str(), X_OK) != 0) throw std::runtime_error(target + " is missing");
  const std::string command = "ITO_WORKERS=" + std::to_string(w) + " " + ITO_BENCH_MPIEXEC +
                              " -n " + std::to_string(ranks) + " " + target + " --n " +
                              std::to_string(p.n) + " --runs " + std::to_string(p.runs) + " 2>&1";
  FILE* in = popen(command.c_str(), "r");
  if (!in) throw std::runtime_error("cannot run " + command + ": " + std::strerror(errno));
  std::vector<std::int64_t> ns;
  std::vector<double> moved, requests, joins, bytes;
  std::string unexpected;
  char line[512];
  while (std::fgets(line, sizeof line, in)) {
    double ms = 0;
    long value = 0;
    unsigned long long m = 0, q = 0, j = 0, b = 0;
    if (std::sscanf(line, "run %lf %ld %llu %llu %llu %llu", &ms, &value, &m, &q, &j, &b) == 6) {
      if (value != fib_value(p.n))
        throw std::runtime_error("distributed fib(" + std::to_string(p.n) + ") = " +
                                 std::to_string(value));
      ns.push_back(static_cast<std::int64_t>(ms * 1e6));
      moved.push_back(static_cast<double>(m));
      requests.push_back(static_cast<double>(q));
      joins.push_back(static_cast<double>(j));
      bytes.push_back(static_cast<double>(b));
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
             {"stack_bytes_moved", median(bytes)}};
}
#endif

}  // namespace

void run_dist_fib(const dist_fib_params& p, reporter& out) {
  for (unsigned w : p.workers) {
    progress("dist-fib(%d), %u worker(s), one process...", p.n, w);
    result shared = row(p, "ito (one process)", w);
    shared.reference = true;
    shared.note = "each run: start_main_thread, fresh runtime";
    measure(shared, p.runs, [&] {
      const std::int64_t t0 = now_ns();
      const long v = ito::start_main_thread_with_worker_size(
          w, [&] { return ito::join(ito::create_thread(shared_fib, p.n)); });
      const std::int64_t t = now_ns() - t0;
      if (v != fib_value(p.n)) throw std::runtime_error("fib: wrong result");
      return t;
    });
    out.add(std::move(shared));
    for (unsigned ranks : p.ranks) {
      result r = row(p, "distributed, " + std::to_string(ranks) + " rank(s)", w);
#if defined(ITO_BENCH_MPIEXEC)
      progress("dist-fib(%d), %u worker(s), %u rank(s)...", p.n, w, ranks);
      r.note = "each run: ito::dist::start_main_thread on every rank";
      run_distributed(p, ranks, w, r);
      out.add(std::move(r));
#else
      out.add(not_available("dist-fib", r.group, r.impl, w,
                            "built without the distributed mode (no MPI found)"));
#endif
    }
  }
}

}  // namespace bench

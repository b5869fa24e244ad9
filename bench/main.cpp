// SPDX-License-Identifier: Apache-2.0
// ito-bench: one subcommand per benchmark; each measures ito and the systems it
// is compared with in the same run. See BENCHMARKS.md for results.
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "benchmarks.hpp"
#include "harness.hpp"

namespace bench {
int run_posix(int argc, char** argv);  // bench/posix.cpp: seed 001's table 3
// bench/wake.cpp and bench/flow_dag.cpp: parse their flags, run, print.
void wake_subcommand(args& a, const common_flags& c, reporter& out);
void flow_subcommand(args& a, const common_flags& c, reporter& out);
// bench/pool.cpp and bench/delegate.cpp: parse their flags, run, print.
void pool_command(args& a, const common_flags& c, reporter& out);
void delegate_command(args& a, const common_flags& c, reporter& out);
// bench/phases.cpp: fork-join phases from the main thread after idling.
void phases_command(args& a, const common_flags& c, reporter& out);
// bench/preempt.cpp: a sleeper's wake lateness beside busy threads on one CPU.
void preempt_command(args& a, const common_flags& c, reporter& out);
}

namespace {

const char* const usage_text =
    "usage: ito-bench <subcommand> [flags]\n"
    "\n"
    "subcommands (each also runs its comparison systems in the same process):\n"
    "  fib          [--n N]                fib(n), default 30, one ULT per call: ito, sequential,\n"
    "                                      oneTBB task_group, OpenMP tasks (default W: 1,2)\n"
    "  create-join  [--iters N] [--stolen-iters N] [--os-iters N]\n"
    "                                      empty ULT create+join (default 1e6) vs\n"
    "                                      pthread_create/join and std::thread (2e4)\n"
    "  yield        [--iters N] [--os-iters N] [--fiber-iters N]\n"
    "                                      two ULTs on one worker yielding (1e7 in total) vs\n"
    "                                      sched_yield on one CPU (2e6) and Boost.Fiber (1e7)\n"
    "  mutex        [--iters N] [--contended-iters N] [--work-between N]\n"
    "                                      uncontended ito::mutex lock/unlock (1e7) vs\n"
    "                                      pthread_mutex; contended, 1e6 per thread (W: 1,2,4),\n"
    "                                      each thread looping N times after each unlock (0)\n"
    "  blocked      [--ults N] [--os-threads N]\n"
    "                                      1e6 blocked ULTs: create, release, peak RSS vs\n"
    "                                      1e4 pthreads blocked on a condition variable\n"
    "  posix        [--attr-iters N] [--iters N] [--os-iters N] [--lock-iters N]\n"
    "                                      seed 001 table 3: ito's POSIX layer vs NPTL\n"
    "  wake         [--max-n N] [--step S]\n"
    "                                      seed 004 table 1: n = 1, S..N (32..256) waiters, one\n"
    "                                      completion at a time: ito::flow direct continuation,\n"
    "                                      ULTs on flow futures, ito condvar; pthreads (W: 1,2)\n"
    "  flow         [--n N]                N x N wavefront DAG (1000): ito::flow vs oneTBB's flow\n"
    "                                      graph continue_node, time per node (W: 1,2)\n"
    "  pool         [--jobs N] [--warm-jobs N]\n"
    "                                      n jobs on fresh pthreads vs on an os_pool made for\n"
    "                                      them: uses from which reuse wins; warm hand-off\n"
    "  delegate     [--calls N] [--ults N] [--calls-per-ult N]\n"
    "                                      delegation round trip (modes 1, 2) vs os_pool and\n"
    "                                      std::async; 1,000 ULTs delegating at once (W: 2)\n"
    "  phases       [--phases N] [--work-us U] [--gap-ms G]\n"
    "                                      W children of U us (1000) forked from the main thread\n"
    "                                      after G ms idle (20), N phases (20): ito, std::thread,\n"
    "                                      oneTBB, OpenMP (W: 2,4)\n"
    "  preempt      [--samples N] [--sleep-us U] [--busy B] [--slice-us S]\n"
    "                                      a thread sleeping U us (2000), N times (100), beside B\n"
    "                                      busy ones (1) on one CPU: how late it runs again, NPTL\n"
    "                                      and ito under the preload at one worker (ITO_PREEMPT=S)\n"
    "  dsm          [--ranks N] [--pages N] [--node M]\n"
    "                                      the DSM's fetch, release, barrier against raw MPI and\n"
    "                                      seed 003 listing 3's sweep; launches N (2) ranks itself\n"
    "                                      (default runs: 7)\n"
    "  dist-fib     [--n N] [--ranks R[,R...]] [--node M]\n"
    "                                      fib(n) (30) on the distributed scheduler at 1,2,4\n"
    "                                      ranks (launched through mpiexec) vs one process;\n"
    "                                      x_1rank, x_one_process: time over those rows'\n"
    "  dist-sort    [--n N] [--ranks R[,R...]] [--node M] [--access A]\n"
    "                                      cilksort of N ints (1e7) in the DSM, the same way;\n"
    "                                      --access fault|checkout|both (both): leaves load and\n"
    "                                      store, or check their ranges out first\n"
    "  dist-stencil [--n N] [--sweeps S] [--ranks R[,R...]] [--node M]\n"
    "                                      S (30) Jacobi sweeps over an N x N (2048) grid of\n"
    "                                      doubles in the DSM, the same way, and plain loops\n"
    "                                      --node host|rank|pair|both|all (both: host and rank):\n"
    "                                      ITO_DIST_NODE of the distributed runs (host: ranks of\n"
    "                                      one host share memory; rank: one node per rank, all\n"
    "                                      through the DSM protocol; pair: nodes of two ranks,\n"
    "                                      the protocol between them; from 3 ranks)\n"
    "  demo                                fib, create-join, yield, mutex, blocked, wake, flow,\n"
    "                                      pool, delegate: small, runs=3\n"
    "\n"
    "common flags:\n"
    "  --workers N[,N...]  worker counts (repeatable); default: the subcommand's standard set\n"
    "  --runs R            timed runs per row (default 5, demo 3); the median is reported\n"
    "  --json              one JSON object per row and line, instead of the table\n"
    "  --only NAME[,NAME]  only the rows whose implementation contains NAME (e.g. ito)\n"
    "  -h, --help          this text\n";

int usage(const std::string& error) {
  if (!error.empty()) std::fprintf(stderr, "ito-bench: %s\n", error.c_str());
  std::fputs(usage_text, stderr);
  return 2;
}

template <class P>
void apply_common(P& p, const bench::common_flags& c) {
  p.runs = c.runs;
  if (!c.workers.empty()) p.workers = c.workers;
}

int run(int argc, char** argv) {
  if (argc < 2) throw bench::usage_error("missing subcommand");
  const std::string cmd = argv[1];
  if (cmd == "-h" || cmd == "--help" || cmd == "help") {
    std::fputs(usage_text, stdout);
    return 0;
  }
  if (cmd == "posix") return bench::run_posix(argc, argv);
  bench::args a(argc, argv, 2);
  if (a.take_switch("-h") || a.take_switch("--help")) {
    std::fputs(usage_text, stdout);
    return 0;
  }
  const bool is_demo = cmd == "demo";
  const bench::common_flags c = a.take_common(is_demo ? 3 : cmd == "dsm" ? 7 : 5);
  bench::reporter out(c.json);

  if (cmd == "dist-fib" || cmd == "dist-sort" || cmd == "dist-stencil") {
    bench::dist_params p;
    if (cmd == "dist-fib") {
      p.n = a.take_int("--n", 30, 2, 45);
    } else if (cmd == "dist-sort") {
      p.kernel = bench::dist_kernel::sort;
      p.n = a.take_int("--n", 10'000'000, 1, 1'000'000'000);
      const std::string access = a.take_string("--access", "both");
      if (access == "fault") p.checkouts = {false};
      else if (access == "checkout") p.checkouts = {true};
      else if (access == "both") p.checkouts = {false, true};
      else throw bench::usage_error("--access must be fault, checkout or both, not '" + access + "'");
    } else {
      p.kernel = bench::dist_kernel::stencil;
      p.n = a.take_int("--n", 2048, 3, 65'536);
      p.sweeps = a.take_int("--sweeps", p.sweeps, 1, 1'000'000);
    }
    p.ranks = a.take_list("--ranks", p.ranks);
    for (unsigned r : p.ranks)
      if (r == 0 || r > 1024) throw bench::usage_error("--ranks: each must be 1 to 1024");
    p.modes = bench::parse_node_modes(a.take_string("--node", "both"));
    a.finish();
    apply_common(p, c);
    bench::run_dist(p, out);
    out.print_table(cmd + "(" + std::to_string(p.n) + ")");
  } else if (cmd == "dsm") {
    bench::dsm_params p;
    p.ranks = static_cast<unsigned>(a.take_int("--ranks", p.ranks, 2, 1024));
    p.pages = a.take_int("--pages", p.pages, 1, 1 << 20);
    p.modes = bench::parse_node_modes(a.take_string("--node", "both"));
    a.finish();
    if (!c.workers.empty()) throw bench::usage_error("dsm: --workers does not apply");
    p.runs = c.runs;
    bench::run_dsm(p, out);
    out.print_table("dsm at " + std::to_string(p.ranks) + " ranks, " + std::to_string(p.pages) +
                    " pages (ns/op: per page; barrier, listing 3, round trip: per call)");
  } else if (cmd == "fib") {
    bench::fib_params p;
    p.n = static_cast<int>(a.take_int("--n", 30, 2, 45));
    a.finish();
    apply_common(p, c);
    bench::run_fib(p, out);
    out.print_table("fib(" + std::to_string(p.n) + ")");
  } else if (cmd == "create-join") {
    bench::create_join_params p;
    p.ito_iters = a.take_int("--iters", p.ito_iters, 1, 1'000'000'000);
    p.stolen_iters = a.take_int("--stolen-iters", p.ito_iters, 1, 1'000'000'000);
    p.os_iters = a.take_int("--os-iters", p.os_iters, 1, 10'000'000);
    a.finish();
    apply_common(p, c);
    bench::run_create_join(p, out);
    out.print_table("create-join");
  } else if (cmd == "yield") {
    bench::yield_params p;
    p.ito_yields = a.take_int("--iters", p.ito_yields, 2, 10'000'000'000);
    p.os_yields = a.take_int("--os-iters", p.os_yields, 2, 10'000'000'000);
    p.fiber_yields = a.take_int("--fiber-iters", p.fiber_yields, 2, 10'000'000'000);
    a.finish();
    apply_common(p, c);
    bench::run_yield(p, out);
    out.print_table("yield");
  } else if (cmd == "mutex") {
    bench::mutex_params p;
    p.uncontended = a.take_int("--iters", p.uncontended, 1, 10'000'000'000);
    p.contended = a.take_int("--contended-iters", p.contended, 1, 1'000'000'000);
    p.work_between = a.take_int("--work-between", p.work_between, 0, 1'000'000);
    a.finish();
    apply_common(p, c);
    bench::run_mutex(p, out);
    out.print_table("mutex");
  } else if (cmd == "blocked") {
    bench::blocked_params p;
    p.ults = a.take_int("--ults", p.ults, 1, 100'000'000);
    p.os_threads = a.take_int("--os-threads", p.os_threads, 1, 1'000'000);
    a.finish();
    apply_common(p, c);
    bench::run_blocked(p, out);
    out.print_table("blocked");
  } else if (cmd == "wake") {
    bench::wake_subcommand(a, c, out);
  } else if (cmd == "flow") {
    bench::flow_subcommand(a, c, out);
  } else if (cmd == "pool") {
    bench::pool_command(a, c, out);
  } else if (cmd == "delegate") {
    bench::delegate_command(a, c, out);
  } else if (cmd == "phases") {
    bench::phases_command(a, c, out);
  } else if (cmd == "preempt") {
    bench::preempt_command(a, c, out);
  } else if (is_demo) {
    a.finish();
    // Small sizes: the whole demo takes well under two minutes on 2 cores.
    bench::fib_params f;
    f.n = 27;
    apply_common(f, c);
    bench::run_fib(f, out);
    bench::create_join_params cj;
    cj.ito_iters = 200'000;
    cj.stolen_iters = 10'000;  // a latency: each can cost a futex wake-up
    cj.os_iters = 2'000;
    apply_common(cj, c);
    bench::run_create_join(cj, out);
    bench::yield_params y;
    y.ito_yields = 2'000'000;
    y.os_yields = 200'000;
    y.fiber_yields = 2'000'000;
    y.runs = c.runs;  // the demo's --workers is for fib and create-join only
    bench::run_yield(y, out);
    bench::mutex_params m;
    m.uncontended = 2'000'000;
    m.contended = 100'000;
    m.runs = c.runs;
    bench::run_mutex(m, out);
    bench::blocked_params b;
    b.ults = 50'000;  // fresh stacks: one page fault each (tens of µs in a VM)
    b.os_threads = 1'000;
    b.runs = c.runs;
    bench::run_blocked(b, out);
    out.print_table("demo (small sizes; run the subcommands for the full ones)");
    // The other layers, small, each with its own table: the flow layer
    // (seed 004), the OS-thread pool (seed 002) and delegation (seed 001).
    using command_fn = void (*)(bench::args&, const bench::common_flags&, bench::reporter&);
    std::vector<bench::result> all = out.results();
    auto small = [&](command_fn command, std::vector<const char*> flags) {
      std::vector<char*> argv;
      for (const char* f : flags) argv.push_back(const_cast<char*>(f));
      bench::args sub(static_cast<int>(argv.size()), argv.data(), 0);
      bench::reporter sub_out(c.json);
      command(sub, c, sub_out);
      all.insert(all.end(), sub_out.results().begin(), sub_out.results().end());
    };
    small(bench::wake_subcommand, {"--max-n", "128", "--step", "64"});
    small(bench::flow_subcommand, {"--n", "300"});
    small(bench::pool_command, {"--jobs", "20", "--warm-jobs", "2000"});
    small(bench::delegate_command, {"--calls", "2000", "--ults", "200", "--calls-per-ult", "5"});
    if (!c.json) bench::print_summary(all);
  } else {
    throw bench::usage_error("unknown subcommand '" + cmd + "'");
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const bench::usage_error& e) {
    return usage(e.what());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ito-bench: %s\n", e.what());
    return 1;
  }
}

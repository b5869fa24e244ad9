// SPDX-License-Identifier: Apache-2.0
// `ito-bench flow`: a wide and deep DAG, the 2-D wavefront: node (i,j) runs
// after (i-1,j) and (i,j-1) and sums their cells (paths mod 2^64), n x n nodes
// (default 1000 x 1000 = 10^6). ito::flow against oneTBB's flow graph
// (tbb::flow::continue_node), same body, same edges, at each worker count.
// Only the run is timed (graph built once, then run --runs times after a
// warm-up run); every run's result is checked.
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness.hpp"
#include "ito/flow.hpp"
#include "ito/thread.hpp"

#if ITO_BENCH_HAVE_TBB
#include <tbb/flow_graph.h>
#include <tbb/task_arena.h>
#endif

namespace bench {
namespace {

struct wavefront {
  explicit wavefront(int side) : n(side), cell(static_cast<std::size_t>(side) * side, 0) {}
  void compute(int i, int j) {
    const std::size_t k = static_cast<std::size_t>(i) * n + j;
    if (i == 0 && j == 0) {
      cell[k] = 1;
      return;
    }
    cell[k] = (i ? cell[k - n] : 0) + (j ? cell[k - 1] : 0);
  }
  // C(2(n-1), n-1) mod 2^64, computed directly.
  std::uint64_t expected() const {
    std::vector<std::uint64_t> row(static_cast<std::size_t>(n), 1);
    for (int i = 1; i < n; ++i)
      for (int j = 1; j < n; ++j) row[j] += row[j - 1];
    return row.back();
  }
  void check(std::uint64_t want) const {
    if (cell.back() != want) throw std::runtime_error("flow: wrong wavefront result");
  }
  const int n;
  std::vector<std::uint64_t> cell;
};

result row(const std::string& impl, unsigned w, int side) {
  result r;
  r.bench = "flow";
  r.group = "wavefront " + std::to_string(side) + "x" + std::to_string(side);
  r.impl = impl;
  r.workers = w;
  r.params = {{"n", std::to_string(side)}, {"nodes", std::to_string(1LL * side * side)}};
  r.ops = static_cast<double>(side) * side;
  return r;
}

void run_ito(int side, unsigned w, int runs, reporter& out) {
  result r = row("ito::flow", w, side);
  r.reference = true;
  r.note = "one fetch_sub per edge; per-worker Chase-Lev deques";
  reset_peak_rss();
  std::vector<std::int64_t> ns;
  double build_ms = 0;
  ito::start_main_thread_with_worker_size(w, [&] {
    wavefront wf(side);
    const std::uint64_t want = wf.expected();
    ito::flow::graph g;
    const std::int64_t b0 = now_ns();
    std::vector<ito::flow::node*> nodes;
    nodes.reserve(static_cast<std::size_t>(side) * side);
    for (int i = 0; i < side; ++i)
      for (int j = 0; j < side; ++j) nodes.push_back(&g.add([&wf, i, j] { wf.compute(i, j); }));
    for (int i = 0; i < side; ++i)
      for (int j = 0; j < side; ++j) {
        if (i) g.edge(*nodes[(i - 1) * side + j], *nodes[i * side + j]);
        if (j) g.edge(*nodes[i * side + j - 1], *nodes[i * side + j]);
      }
    g.seal();
    build_ms = static_cast<double>(now_ns() - b0) / 1e6;
    g.run_and_wait();  // warm-up: first touch of every node and deque
    wf.check(want);
    for (int k = 0; k < runs; ++k) {
      const std::int64_t t0 = now_ns();
      g.run();
      g.wait();
      ns.push_back(now_ns() - t0);
      wf.check(want);
    }
  });
  summarize(r, ns);
  r.peak_rss_kb = peak_rss_kb();
  r.extra.push_back({"build_ms", build_ms});
  out.add(std::move(r));
}

void run_tbb(int side, unsigned w, int runs, reporter& out) {
#if ITO_BENCH_HAVE_TBB
  using namespace tbb::flow;
  result r = row("oneTBB continue_node", w, side);
  r.note = "tbb::flow::graph in a task_arena of W threads";
  reset_peak_rss();
  std::vector<std::int64_t> ns;
  double build_ms = 0;
  tbb::task_arena arena(static_cast<int>(w));
  arena.execute([&] {
    wavefront wf(side);
    const std::uint64_t want = wf.expected();
    graph g;
    const std::int64_t b0 = now_ns();
    std::vector<std::unique_ptr<continue_node<continue_msg>>> nodes;
    nodes.reserve(static_cast<std::size_t>(side) * side);
    for (int i = 0; i < side; ++i)
      for (int j = 0; j < side; ++j)
        nodes.push_back(std::make_unique<continue_node<continue_msg>>(
            g, [&wf, i, j](const continue_msg&) { wf.compute(i, j); }));
    for (int i = 0; i < side; ++i)
      for (int j = 0; j < side; ++j) {
        if (i) make_edge(*nodes[(i - 1) * side + j], *nodes[i * side + j]);
        if (j) make_edge(*nodes[i * side + j - 1], *nodes[i * side + j]);
      }
    build_ms = static_cast<double>(now_ns() - b0) / 1e6;
    auto once = [&] {
      nodes[0]->try_put(continue_msg());
      g.wait_for_all();
    };
    once();
    wf.check(want);
    for (int k = 0; k < runs; ++k) {
      const std::int64_t t0 = now_ns();
      once();
      ns.push_back(now_ns() - t0);
      wf.check(want);
    }
  });
  summarize(r, ns);
  r.peak_rss_kb = peak_rss_kb();
  r.extra.push_back({"build_ms", build_ms});
  out.add(std::move(r));
#else
  out.add(not_available("flow", row("", w, side).group, "oneTBB continue_node", w,
                        "built without oneTBB (install libtbb-dev)"));
  (void)runs;
#endif
}

}  // namespace

// The `flow` subcommand: parses its flags, runs, prints.
void flow_subcommand(args& a, const common_flags& c, reporter& out) {
  const int side = static_cast<int>(a.take_int("--n", 1000, 2, 4000));
  a.finish();
  std::vector<unsigned> workers = c.workers.empty() ? std::vector<unsigned>{1, 2} : c.workers;
  for (unsigned w : workers) {
    if (selected("ito")) {
      progress("flow: ito wavefront %dx%d, %u worker(s)...", side, side, w);
      run_ito(side, w, c.runs, out);
    }
    if (selected("oneTBB")) {
      progress("flow: oneTBB wavefront %dx%d, %u worker(s)...", side, side, w);
      run_tbb(side, w, c.runs, out);
    }
  }
  out.print_table("flow: " + std::to_string(side) + "x" + std::to_string(side) +
                  " wavefront DAG (time per node: ns/op)");
}

}  // namespace bench

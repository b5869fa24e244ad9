// SPDX-License-Identifier: Apache-2.0
// ito::flow static graphs: counters and ordering on random DAGs, re-runs,
// values, cycle rejection, counters continued below zero.
#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "ito/flow.hpp"
#include "ito/thread.hpp"
#include "test_support.hpp"

namespace {

namespace flow = ito::flow;

class flow_at_workers : public ::testing::TestWithParam<unsigned> {};

// A random DAG whose bodies check, with per-node atomic flags, that every
// predecessor has finished before they start; run several times.
TEST_P(flow_at_workers, random_dag_never_runs_a_node_before_its_predecessors) {
  const auto n = static_cast<std::uint32_t>(ito::test::scaled(4000));
  ito::start_main_thread_with_worker_size(GetParam(), [n] {
    std::mt19937 rng(12345 + GetParam());
    std::vector<std::vector<std::uint32_t>> preds(n);
    for (std::uint32_t j = 1; j < n; ++j) {
      const unsigned k = rng() % 4;
      for (unsigned e = 0; e < k; ++e) preds[j].push_back(rng() % j);  // duplicates allowed
    }
    auto done = std::make_unique<std::atomic<int>[]>(n);
    auto runs = std::make_unique<std::atomic<int>[]>(n);
    std::atomic<long> violations{0};
    int round = 0;
    flow::graph g;
    std::vector<flow::node*> nodes;
    for (std::uint32_t j = 0; j < n; ++j) {
      // Not "n" + std::to_string(j): gcc 12 at -O3 warns falsely on it (-Wrestrict).
      char name[16];
      std::snprintf(name, sizeof name, "n%u", static_cast<unsigned>(j));
      nodes.push_back(&g.add(name, [&, j] {
        for (std::uint32_t p : preds[j])
          if (done[p].load(std::memory_order_acquire) != round) violations.fetch_add(1);
        runs[j].fetch_add(1, std::memory_order_relaxed);
        done[j].store(round, std::memory_order_release);
      }));
    }
    for (std::uint32_t j = 0; j < n; ++j)
      for (std::uint32_t p : preds[j]) g.edge(*nodes[p], *nodes[j]);
    for (round = 1; round <= 3; ++round) {
      g.run_and_wait();
      EXPECT_TRUE(g.idle());
      for (std::uint32_t j = 0; j < n; ++j) {
        ASSERT_EQ(done[j].load(), round) << "node " << j << " did not run in round " << round;
        ASSERT_EQ(runs[j].load(), round) << "node " << j << " ran twice in a round";
      }
    }
    EXPECT_EQ(violations.load(), 0);
  });
}

// A wavefront (node (i,j) after (i-1,j) and (i,j-1)) computing path counts
// mod 2^64, re-run several times: the result of every run must be exact.
TEST_P(flow_at_workers, wavefront_rerun_gives_the_same_result_every_time) {
  const int side = ito::test::tsan ? 20 : 100;
  ito::start_main_thread_with_worker_size(GetParam(), [side] {
    std::vector<std::uint64_t> cell(static_cast<std::size_t>(side * side));
    flow::graph g;
    std::vector<flow::node*> nodes;
    for (int i = 0; i < side; ++i)
      for (int j = 0; j < side; ++j)
        nodes.push_back(&g.add([&cell, i, j, side] {
          std::uint64_t up = i ? cell[(i - 1) * side + j] : 0;
          std::uint64_t left = j ? cell[i * side + j - 1] : 0;
          cell[i * side + j] = (i == 0 && j == 0) ? 1 : up + left;
        }));
    for (int i = 0; i < side; ++i)
      for (int j = 0; j < side; ++j) {
        if (i) g.edge(*nodes[(i - 1) * side + j], *nodes[i * side + j]);
        if (j) g.edge(*nodes[i * side + j - 1], *nodes[i * side + j]);
      }
    std::uint64_t first = 0;
    for (int r = 0; r < 5; ++r) {
      std::fill(cell.begin(), cell.end(), 0);
      g.run_and_wait();
      if (r == 0) first = cell.back();
      EXPECT_EQ(cell.back(), first) << "run " << r;
    }
    // C(2(side-1), side-1) mod 2^64 computed directly.
    std::vector<std::uint64_t> row(static_cast<std::size_t>(side), 1);
    for (int i = 1; i < side; ++i)
      for (int j = 1; j < side; ++j) row[j] += row[j - 1];
    EXPECT_EQ(first, row.back());
  });
}

INSTANTIATE_TEST_SUITE_P(workers, flow_at_workers, ::testing::Values(1u, 2u, 4u, 8u));

TEST(flow_graph, the_releasing_continuation_passes_its_value) {
  ito::start_main_thread_with_worker_size(2, [] {
    flow::graph g;
    std::atomic<std::uint64_t> got{0};
    int payload = 42;
    std::atomic<int*> got_ptr{nullptr};
    auto& sink = g.add("sink", [&](flow::context& c) { got = c.value(); }, {.counter = 1});
    auto& ptr_sink = g.add("ptr", [&](flow::context& c) { got_ptr = c.pointer<int>(); },
                           {.counter = 1});
    flow::continue_to(sink, 7);
    flow::continue_to(ptr_sink, &payload);
    g.wait();
    EXPECT_EQ(got.load(), 7u);
    EXPECT_EQ(got_ptr.load(), &payload);
    // Reactive use: the same node runs again for the next continuation.
    flow::continue_to(sink, 9);
    g.wait();
    EXPECT_EQ(got.load(), 9u);
  });
}

TEST(flow_graph, a_cycle_is_rejected_and_named) {
  ito::start_main_thread_with_worker_size(1, [] {
    flow::graph g;
    auto& entry = g.add("entry", [] {});
    auto& a = g.add("a", [] {});
    auto& b = g.add("b", [] {});
    auto& c = g.add("c", [] {});
    g.edge(entry, a);
    g.edge(a, b);
    g.edge(b, c);
    g.edge(c, a);
    try {
      g.run();
      FAIL() << "run() accepted a cycle";
    } catch (const flow::flow_error& e) {
      EXPECT_EQ(e.code(), ELOOP);
      EXPECT_NE(std::string(e.what()).find("a -> b -> c -> a"), std::string::npos) << e.what();
    }
    EXPECT_TRUE(g.idle());

    flow::graph self;
    auto& x = self.add("x", [] {});
    self.edge(x, x);
    try {
      self.seal();
      FAIL() << "seal() accepted a self-loop";
    } catch (const flow::flow_error& e) {
      EXPECT_EQ(e.code(), ELOOP);
      EXPECT_NE(std::string(e.what()).find("x -> x"), std::string::npos) << e.what();
    }
  });
}

TEST(flow_graph, continuing_below_zero_is_an_error_not_a_wrap) {
  ito::start_main_thread_with_worker_size(1, [] {
    flow::graph g;
    std::atomic<int> ran{0};
    auto& once = g.add("once", [&] { ++ran; }, {.counter = 1});
    flow::continue_to(once);  // runnable; it cannot run before this ULT waits (1 worker)
    try {
      flow::continue_to(once);
      FAIL() << "a second continuation of a runnable node was accepted";
    } catch (const flow::flow_error& e) {
      EXPECT_EQ(e.code(), ERANGE);
      EXPECT_NE(std::string(e.what()).find("'once'"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("below zero"), std::string::npos) << e.what();
    }
    EXPECT_EQ(once.counter(), 0);  // still runnable: the rejected continuation counts for nothing
    g.wait();
    EXPECT_EQ(ran.load(), 1);
    EXPECT_EQ(once.counter(), 1);  // re-armed

    // A source (counter 0) takes no continuation at all.
    auto& source = g.add("source", [] {});
    g.seal();
    EXPECT_THROW(flow::continue_to(source), flow::flow_error);

    // From inside a body: the error reaches graph::wait().
    flow::graph h;
    auto& target = h.add("target", [] {}, {.counter = 1});
    h.add("twice", [&](flow::context& c) {
      c.continue_to(target);
      c.continue_to(target);
    });
    try {
      h.run_and_wait();
      FAIL() << "wait() did not report the body's error";
    } catch (const flow::flow_error& e) {
      EXPECT_EQ(e.code(), ERANGE);
      EXPECT_NE(std::string(e.what()).find("'target'"), std::string::npos) << e.what();
    }
    // Reported once per run, and the graph stays usable.
    EXPECT_THROW(h.run_and_wait(), flow::flow_error);
    EXPECT_TRUE(h.idle());
  });
}

TEST(flow_graph, a_body_exception_reaches_wait_and_successors_still_run) {
  ito::start_main_thread_with_worker_size(2, [] {
    flow::graph g;
    std::atomic<int> after{0};
    auto& bad = g.add("bad", [] { throw std::runtime_error("boom"); });
    auto& next = g.add("next", [&] { ++after; });
    g.edge(bad, next);
    EXPECT_THROW(g.run_and_wait(), std::runtime_error);
    EXPECT_EQ(after.load(), 1);
  });
}

TEST(flow_graph, bad_input_is_rejected) {
  ito::start_main_thread_with_worker_size(1, [] {
    flow::graph g, other;
    auto& a = g.add("a", [] {});
    auto& b = g.add("b", [] {});
    auto& x = other.add("x", [] {});
    EXPECT_THROW(g.edge(a, x), flow::flow_error);  // another graph's node
    g.edge(a, b, 1);                                 // a port on a non-exclusive node
    EXPECT_THROW(g.seal(), flow::flow_error);
    EXPECT_THROW(g.add("n", [] {}, {.counter = -2}), flow::flow_error);
    EXPECT_THROW(flow::continue_to(x, 1, 3), flow::flow_error);  // x has no ports
    EXPECT_THROW(g.release(), flow::flow_error);                 // no hold
  });
  // No runtime: continuing is refused.
  flow::graph g;
  auto& a = g.add("a", [] {}, {.counter = 1});
  try {
    flow::continue_to(a);
    FAIL();
  } catch (const flow::flow_error& e) {
    EXPECT_EQ(e.code(), EPERM);
  }
}

}  // namespace

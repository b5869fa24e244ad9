// SPDX-License-Identifier: Apache-2.0
// Nodes and ULTs on the same workers: a ULT waits for a node (suspending,
// not spinning), a node spawns ULTs, an OS thread waits for a graph.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cerrno>
#include <thread>
#include <vector>

#include "ito/flow.hpp"
#include "ito/thread.hpp"
#include "test_support.hpp"

namespace {

namespace flow = ito::flow;

// One worker: if the waiting ULT spun, the node could never run.
TEST(flow_interplay, a_ult_waits_on_a_node_future_by_suspending) {
  ito::start_main_thread_with_worker_size(1, [] {
    flow::graph g;
    std::atomic<int> ran{0};
    auto& n = g.add("n", [&] { ++ran; }, {.counter = 1});
    flow::completion f = n.completion();
    EXPECT_FALSE(f.ready());
    auto waiter = ito::create_thread([&] {
      f.wait();  // suspends: the main ULT runs next and continues the node
      return ran.load();
    });
    EXPECT_EQ(ran.load(), 0);
    flow::continue_to(n);
    EXPECT_EQ(ito::join(waiter), 1);
    EXPECT_TRUE(f.ready());
    // Already complete: no wait at all.
    f.wait();
    // A second future waits for the next activation.
    flow::completion f2 = n.completion();
    EXPECT_FALSE(f2.ready());
    flow::continue_to(n);
    f2.wait();
    EXPECT_EQ(ran.load(), 2);
  });
}

TEST(flow_interplay, many_ults_wait_on_their_own_nodes) {
  const int n = static_cast<int>(ito::test::scaled(400));
  ito::start_main_thread_with_worker_size(4, [n] {
    flow::graph g;
    std::vector<flow::node*> nodes;
    std::vector<flow::completion> futures;
    std::atomic<int> woken{0};
    for (int i = 0; i < n; ++i) {
      nodes.push_back(&g.add([] {}, {.counter = 1}));
      futures.push_back(nodes.back()->completion());
    }
    std::vector<ito::future<void>> ults;
    for (int i = 0; i < n; ++i)
      ults.push_back(ito::create_thread([&, i] {
        futures[i].wait();
        woken.fetch_add(1);
      }));
    for (int i = n - 1; i >= 0; --i) flow::continue_to(*nodes[i]);
    for (auto& u : ults) ito::join(u);
    EXPECT_EQ(woken.load(), n);
    g.wait();
  });
}

// A body is not a ULT, but ito::create_thread works there: the ULTs run on the
// same workers, and continue a join node that the main ULT waits for.
TEST(flow_interplay, a_node_spawns_ults_that_continue_the_graph) {
  static constexpr int spawned = 100;
  for (unsigned workers : {1u, 2u, 4u}) {
    ito::start_main_thread_with_worker_size(workers, [] {
      flow::graph g;
      std::atomic<int> ult_runs{0}, in_ult_seen{0}, body_in_ult{-1};
      auto& join = g.add("join", [] {}, {.counter = spawned});
      flow::completion all = join.completion();
      g.add("spawner", [&] {
        body_in_ult = ito::in_ult() ? 1 : 0;
        for (int i = 0; i < spawned; ++i) {
          // The future is dropped: the ULT is detached.
          ito::create_thread([&] {
            in_ult_seen += ito::in_ult() ? 1 : 0;
            ito::yield();  // a real ULT: it can switch
            ++ult_runs;
            flow::continue_to(join);
          });
        }
      });
      g.run();
      all.wait();
      g.wait();
      EXPECT_EQ(body_in_ult.load(), 0);
      EXPECT_EQ(ult_runs.load(), spawned);
      EXPECT_EQ(in_ult_seen.load(), spawned);
    });
  }
}

// ULTs that never block, only yield, leave room for nodes: a node made
// runnable meanwhile runs while they loop, on one worker as on several.
TEST(flow_interplay, ults_that_keep_yielding_do_not_starve_nodes) {
  for (unsigned workers : {1u, 2u, 4u}) {
    ito::start_main_thread_with_worker_size(workers, [workers] {
      std::atomic<bool> node_ran{false};
      std::vector<ito::future<bool>> yielders;
      for (unsigned i = 0; i < workers + 1; ++i) {
        yielders.push_back(ito::create_thread([&node_ran] {
          auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
          while (!node_ran.load() && std::chrono::steady_clock::now() < give_up) ito::yield();
          return node_ran.load();
        }));
      }
      flow::graph g;
      g.add("starved?", [&] { node_ran = true; });
      g.run();
      for (auto& y : yielders) EXPECT_TRUE(ito::join(y)) << workers << " workers";
      g.wait();
    });
  }
}

TEST(flow_interplay, a_node_body_cannot_wait) {
  ito::start_main_thread_with_worker_size(1, [] {
    flow::graph g;
    auto& other = g.add("other", [] {}, {.counter = 1});
    flow::completion f = other.completion();
    std::atomic<int> code{0};
    g.add("impatient", [&] {
      try {
        f.wait();
      } catch (const flow::flow_error& e) {
        code = e.code();
      }
      try {
        ito::join(ito::create_thread([] {}));
      } catch (const ito::usage_error& e) {
        code = code * 1000 + e.code();
      }
    });
    g.run_and_wait();
    EXPECT_EQ(code.load(), EDEADLK * 1000 + EPERM);
  });
}

// A plain OS thread (not a worker) continues nodes and waits for the graph.
TEST(flow_interplay, an_os_thread_continues_and_waits) {
  ito::start_main_thread_with_worker_size(2, [] {
    flow::graph g;
    std::atomic<int> ran{0};
    auto& n = g.add("n", [&] { ++ran; }, {.counter = 1});
    std::thread t([&] {
      flow::continue_to(n);
      g.wait();
      EXPECT_EQ(ran.load(), 1);
      flow::completion f = n.completion();
      flow::continue_to(n);
      f.wait();
    });
    t.join();
    EXPECT_EQ(ran.load(), 2);
    g.wait();
  });
}

}  // namespace

// SPDX-License-Identifier: Apache-2.0
// Priorities: a runnable high-priority node runs at the next node boundary,
// before normal nodes that were runnable first (quasi-preemption).
#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "arch/cpu_relax.hpp"
#include "ito/flow.hpp"
#include "ito/thread.hpp"

namespace {

namespace flow = ito::flow;

// One worker: the main ULT queues low-priority nodes, then a high one; they
// run once it waits, and the high one must be first.
TEST(flow_priority, a_high_node_queued_last_runs_first) {
  ito::start_main_thread_with_worker_size(1, [] {
    flow::graph g;
    std::vector<std::string> order;
    std::vector<flow::node*> low;
    for (int i = 0; i < 10; ++i)
      low.push_back(&g.add("low" + std::to_string(i), [&, i] { order.push_back("low" + std::to_string(i)); },
                           {.counter = 1}));
    auto& high = g.add("high", [&] { order.push_back("high"); },
                       {.counter = 1, .prio = flow::priority::high});
    for (auto* n : low) flow::continue_to(*n);
    flow::continue_to(high);
    g.wait();
    ASSERT_EQ(order.size(), 11u);
    EXPECT_EQ(order.front(), "high");
  });
}

// One worker: a running node makes normal nodes runnable and then a high one;
// the high one runs at the very next boundary, before any of them and before
// normal nodes queued earlier.
TEST(flow_priority, a_high_node_made_runnable_by_a_node_runs_at_the_next_boundary) {
  ito::start_main_thread_with_worker_size(1, [] {
    flow::graph g;
    std::vector<std::string> order;
    auto record = [&](std::string s) { return [&order, s] { order.push_back(s); }; };
    std::vector<flow::node*> queued_before;
    for (int i = 0; i < 5; ++i)
      queued_before.push_back(&g.add(record("before" + std::to_string(i)), {.counter = 1}));
    std::vector<flow::node*> made;
    for (int i = 0; i < 5; ++i) made.push_back(&g.add(record("made" + std::to_string(i)), {.counter = 1}));
    auto& urgent = g.add(record("urgent"), {.counter = 1});
    urgent.set_priority(flow::priority::high);
    EXPECT_EQ(urgent.prio(), flow::priority::high);
    auto& starter = g.add(
        "starter",
        [&](flow::context& c) {
          order.push_back("starter");
          for (auto* n : made) c.continue_to(*n);
          c.continue_to(urgent);
        },
        {.counter = 1});
    for (auto* n : queued_before) flow::continue_to(*n);
    flow::continue_to(starter);  // LIFO: the starter runs first of the normal nodes
    g.wait();
    ASSERT_EQ(order.size(), 12u);
    EXPECT_EQ(order[0], "starter");
    EXPECT_EQ(order[1], "urgent");
  });
}

// Several workers: with the workers busy on self-renewing streams of normal
// nodes, a high-priority node injected from another thread runs at the next
// boundary: each worker starts at most the one node it may have picked just
// before the high node became visible.
TEST(flow_priority, a_high_node_from_another_thread_preempts_busy_workers_at_a_boundary) {
  constexpr unsigned workers = 2;
  ito::start_main_thread_with_worker_size(workers, [] {
    flow::graph g;
    std::atomic<long> normal_runs{0};
    std::atomic<bool> injected{false};
    std::atomic<long> started_after_injection{0};
    std::atomic<long> seen_by_high{-1};
    std::atomic<bool> stop{false};
    std::function<void(flow::context&)> keep_busy = [&](flow::context& c) {
      if (injected.load()) started_after_injection.fetch_add(1);
      normal_runs.fetch_add(1);
      for (int i = 0; i < 200; ++i) ito::arch::cpu_relax();
      if (!stop.load()) c.spawn(keep_busy);
    };
    auto& high = g.add("high", [&] {
      seen_by_high = started_after_injection.load();
      stop = true;
    }, {.counter = 1, .prio = flow::priority::high});
    for (unsigned i = 0; i < 2 * workers; ++i) g.spawn(keep_busy);
    while (normal_runs.load() < 1000) ito::yield();
    std::thread([&] {
      flow::continue_to(high);
      injected = true;  // after: a node that sees it started after the high node was visible
    }).join();
    g.wait();
    ASSERT_GE(seen_by_high.load(), 0);
    EXPECT_LE(seen_by_high.load(), static_cast<long>(workers))
        << "normal nodes kept starting after the high node was runnable";
  });
}

}  // namespace

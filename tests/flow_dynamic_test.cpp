// SPDX-License-Identifier: Apache-2.0
// Dynamic graphs: nodes made by running nodes (a binary tree of spawns whose
// joins continue their parents' joins), inside a re-run static graph.
#include <gtest/gtest.h>

#include <atomic>

#include "ito/flow.hpp"
#include "ito/thread.hpp"
#include "test_support.hpp"

namespace {

namespace flow = ito::flow;

struct tree_counts {
  std::atomic<long> leaves{0};
  std::atomic<long> joins{0};
  std::atomic<long> early_joins{0};  // a join that ran before both children finished
};

// Spawns two children below `depth`; a dynamic join (counter 2) runs after
// both subtrees and continues `parent_join`. Each subtree counts itself in
// its parent's `finished` just before continuing the parent's join, so a join
// that runs early sees fewer than 2.
void grow(flow::context& c, int depth, flow::node* parent_join, std::atomic<int>* parent_finished,
          tree_counts* t) {
  if (depth == 0) {
    t->leaves.fetch_add(1, std::memory_order_relaxed);
    if (parent_finished) parent_finished->fetch_add(1, std::memory_order_acq_rel);
    c.continue_to(*parent_join);
    return;
  }
  auto* finished = new std::atomic<int>(0);
  flow::node& join = c.make_node(
      [parent_join, parent_finished, t, finished] {
        if (finished->load(std::memory_order_acquire) != 2) t->early_joins.fetch_add(1);
        delete finished;
        t->joins.fetch_add(1, std::memory_order_relaxed);
        if (parent_finished) parent_finished->fetch_add(1, std::memory_order_acq_rel);
        flow::continue_to(*parent_join);
      },
      2);
  for (int k = 0; k < 2; ++k)
    c.spawn([depth, &join, t, finished](flow::context& cc) { grow(cc, depth - 1, &join, finished, t); });
}

class flow_dynamic : public ::testing::TestWithParam<unsigned> {};

TEST_P(flow_dynamic, a_tree_of_spawned_nodes_joins_back_into_the_static_graph) {
  const int depth = ito::test::tsan ? 8 : ito::test::asan ? 11 : 14;
  ito::start_main_thread_with_worker_size(GetParam(), [depth] {
    tree_counts t;
    std::atomic<int> done_runs{0};
    flow::graph g;
    auto& done = g.add("done", [&] { done_runs.fetch_add(1); }, {.counter = 1});
    g.add("root", [&](flow::context& c) { grow(c, depth, &done, nullptr, &t); });
    for (int run = 1; run <= 3; ++run) {
      g.run_and_wait();
      EXPECT_EQ(done_runs.load(), run);
      EXPECT_EQ(t.leaves.load(), run * (1L << depth));
      EXPECT_EQ(t.joins.load(), run * ((1L << depth) - 1));
    }
    EXPECT_EQ(t.early_joins.load(), 0);
  });
}

INSTANTIATE_TEST_SUITE_P(workers, flow_dynamic, ::testing::Values(1u, 2u, 4u, 8u));

// Dynamic nodes made from a ULT, and a chain of them passing a value along.
TEST(flow_dynamic_api, nodes_made_from_a_ult_pass_values_along_a_chain) {
  ito::start_main_thread_with_worker_size(2, [] {
    flow::graph g;
    std::atomic<std::uint64_t> final_value{0};
    auto& last = g.add("last", [&](flow::context& c) { final_value = c.value(); }, {.counter = 1});
    flow::node* next = &last;
    for (int i = 0; i < 100; ++i) {
      flow::node* target = next;
      next = &g.make_node([target](flow::context& c) { c.continue_to(*target, c.value() + 1); }, 1);
    }
    flow::continue_to(*next, 0);
    g.wait();
    EXPECT_EQ(final_value.load(), 100u);
    EXPECT_THROW(g.make_node([] {}, 0), flow::flow_error);
  });
}

}  // namespace

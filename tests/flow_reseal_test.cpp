// SPDX-License-Identifier: Apache-2.0
// Changing an idle graph (a node or an edge added, so the next continuation or
// run() seals it again) keeps what its nodes have already received: a counter
// node partly continued, a join with one of its two events, an exclusive node
// with a value queued on one port.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <vector>

#include "ito/flow.hpp"
#include "ito/thread.hpp"

namespace {

namespace flow = ito::flow;

class flow_reseal : public ::testing::TestWithParam<unsigned> {};

// The review's first shape: counter = 2, continued once, then g.add(y), then
// continued again: it must run (the re-seal must not re-arm it to 2).
TEST_P(flow_reseal, a_counter_node_continued_once_keeps_its_continuation_across_an_add) {
  ito::start_main_thread_with_worker_size(GetParam(), [] {
    flow::graph g;
    std::atomic<int> runs{0};
    flow::node& x = g.add("x", [&] { runs.fetch_add(1); }, flow::node_options{.counter = 2});
    flow::continue_to(x);  // seals the graph; one of two
    g.wait();
    EXPECT_EQ(x.counter(), 1);
    g.add("y", [] {});
    flow::continue_to(x);  // seals it again; two of two
    g.wait();
    EXPECT_EQ(runs.load(), 1) << "x lost the continuation it had before the add";
    EXPECT_EQ(x.counter(), 2);  // re-armed by its start
  });
}

// A node partly continued that gets a new edge: the edge adds one to what it
// still waits for; what it received stays received.
TEST_P(flow_reseal, a_new_edge_adds_to_what_a_partly_continued_node_still_waits_for) {
  ito::start_main_thread_with_worker_size(GetParam(), [] {
    flow::graph g;
    std::atomic<int> runs{0};
    flow::node& a = g.add("a", [] {});
    flow::node& b = g.add("b", [] {});
    flow::node& x = g.add("x", [&] { runs.fetch_add(1); });
    g.edge(a, x);
    g.edge(b, x);
    g.seal();
    EXPECT_EQ(x.counter(), 2);
    flow::continue_to(x);
    g.wait();
    EXPECT_EQ(x.counter(), 1);
    flow::node& c = g.add("c", [] {});
    g.edge(c, x);
    g.seal();
    EXPECT_EQ(x.reset_value(), 3);
    EXPECT_EQ(x.counter(), 2);
    flow::continue_to(x);
    g.wait();
    EXPECT_EQ(runs.load(), 0);
    flow::continue_to(x);
    g.wait();
    EXPECT_EQ(runs.load(), 1);
    EXPECT_EQ(x.counter(), 3);
    // A whole run afterwards: a, b and c each continue it once more.
    g.run_and_wait();
    EXPECT_EQ(runs.load(), 2);
  });
}

// The review's second shape: a join of two events gets its first event, the
// graph grows and is run, then the second event comes: the join runs.
TEST_P(flow_reseal, a_join_of_two_events_keeps_its_first_event_across_run) {
  ito::start_main_thread_with_worker_size(GetParam(), [] {
    flow::graph g;
    std::atomic<int> joined{0}, started{0};
    flow::node& join = g.add("join", [&] { joined.fetch_add(1); }, flow::node_options{.counter = 2});
    flow::continue_to(join);  // event 1
    g.wait();
    g.add("start", [&] { started.fetch_add(1); });
    g.run_and_wait();  // seals again and runs "start"
    EXPECT_EQ(started.load(), 1);
    EXPECT_EQ(joined.load(), 0);
    flow::continue_to(join);  // event 2
    g.wait();
    EXPECT_EQ(joined.load(), 1) << "the join lost its first event across run()";
  });
}

// An exclusive node whose ports are its predecessors: a value queued on port
// 0 stays queued when a new edge gives it a third port.
TEST_P(flow_reseal, an_exclusive_node_keeps_its_queued_values_when_it_gains_a_port) {
  ito::start_main_thread_with_worker_size(GetParam(), [] {
    flow::graph g;
    std::vector<std::uint64_t> seen;
    flow::node& a = g.add("a", [] {});
    flow::node& b = g.add("b", [] {});
    flow::node& e = g.add(
        "e",
        [&](flow::context& ctx) {
          for (unsigned p = 0; p < 3; ++p) seen.push_back(ctx.value(p));
        },
        flow::node_options{.exclusive = true});
    g.edge(a, e);
    g.edge(b, e);
    flow::continue_to(e, std::uint64_t{7}, 0);
    g.wait();
    EXPECT_EQ(e.counter(), 1);  // port 1 still empty
    flow::node& c = g.add("c", [] {});
    g.edge(c, e);
    g.seal();
    EXPECT_EQ(e.reset_value(), 3);
    EXPECT_EQ(e.counter(), 2);  // port 0 still holds 7
    flow::continue_to(e, std::uint64_t{8}, 1);
    flow::continue_to(e, std::uint64_t{9}, 2);
    g.wait();
    EXPECT_EQ(seen, (std::vector<std::uint64_t>{7, 8, 9}));
  });
}

// Still refused while an activation is in flight.
TEST(flow_reseal_busy, adding_while_a_hold_is_outstanding_is_ebusy) {
  ito::start_main_thread_with_worker_size(2, [] {
    flow::graph g;
    g.add("x", [] {});
    g.hold();
    try {
      g.add("y", [] {});
      ADD_FAILURE() << "no error";
    } catch (const flow::flow_error& e) {
      EXPECT_EQ(e.code(), EBUSY);
    }
    g.release();
    g.wait();
  });
}

INSTANTIATE_TEST_SUITE_P(workers, flow_reseal, ::testing::Values(1u, 2u, 4u));

}  // namespace

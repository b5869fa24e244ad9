// SPDX-License-Identifier: Apache-2.0
// The flow layer's internal state: per node (extra), per graph, per worker.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "flow/access.hpp"
#include "flow/completion_count.hpp"
#include "flow/exclusive.hpp"
#include "ito/flow.hpp"
#include "sched/deque.hpp"
#include "sched/worker.hpp"

namespace ito::flow::detail {

// What only some nodes need: exclusive queues, completion futures.
struct node_extra {
  completion_count done;
  std::unique_ptr<exclusive_state> exclusive;
};

inline bool is_dynamic(const node_core& n) noexcept {
  return n.flags.load(std::memory_order_relaxed) & flag_dynamic;
}

// A static edge, as added; graph::seal turns them into successor lists.
struct edge_record {
  std::uint32_t from;
  std::uint32_t to;
  int port;  // -1: the next free port of an exclusive `to`
};

// What add() was asked for, kept for seal() (which may run again after edges change).
struct node_request {
  int counter = -1;
  unsigned capacity = 1024;
};

struct graph_state {
  explicit graph_state(graph* g) : self(g) {}

  // Hot: every activation's credit passes through here (in batches).
  alignas(64) idle_count in_flight;

  alignas(64) graph* self;
  std::atomic<bool> sealed{false};
  std::mutex build_mutex;  // add, edge, seal
  static constexpr std::uint32_t chunk_nodes = 256;
  std::vector<node_core*> chunks;  // static nodes, chunk_nodes each: addresses never move
  std::uint32_t count = 0;
  std::vector<node_request> requests;
  std::vector<edge_record> edges;
  std::vector<std::uintptr_t> successor_table;  // every node's successors, back to back
  std::vector<node_core*> sources;
  mutable std::mutex names_mutex;  // error messages read names while others build
  std::unordered_map<std::uint32_t, std::string> names;

  std::mutex error_mutex;
  std::exception_ptr error;  // the first exception a body threw since the last wait()

  node_core& at(std::uint32_t i) const noexcept { return chunks[i / chunk_nodes][i % chunk_nodes]; }
  std::string name_of(const node_core& n) const;
  void record_error(std::exception_ptr e) noexcept;
  // Seals for a continuation that arrives before run() (reactive use).
  void seal_if_needed();
  // With build_mutex held.
  void seal_locked();
};

struct flow_runtime;

// One per worker, hung off sched::worker::extension.
struct alignas(64) flow_worker {
  flow_worker(flow_runtime* r, sched::worker* w) : frt(r), worker(w), index(w->index) {
    if (w->rt->asymmetric_deques) {  // popped by this worker, stolen by others
      normal.use_asymmetric_fence();
      high.use_asymmetric_fence();
    }
  }

  flow_runtime* const frt;
  sched::worker* const worker;
  const unsigned index;
  sched::chase_lev_deque<node_core*> normal;  // runnable nodes: owner at the bottom, thieves at the top
  sched::chase_lev_deque<node_core*> high;    // runnable high-priority nodes
  std::uint64_t rng = 0;

  // Set while run_some runs nodes; credits are only batched then.
  bool in_run_some = false;
  // The first node an activation releases runs next here without touching
  // the deque (no fence to push, none to pop, no wake-up): a chain of nodes
  // runs like a loop. Only while in_run_some; pushed back when it returns.
  node_core* next_local = nullptr;
  // In-flight credits drawn from credit_graph's count and not yet used: one
  // shared atomic per batch of activations instead of two per activation.
  graph_state* credit_graph = nullptr;
  std::int64_t credits = 0;

  // Recycled dynamic nodes (LIFO: warm lines).
  node_core* free_nodes = nullptr;
  std::uint32_t free_count = 0;
};

// A lock-free stack of nodes made runnable by threads that are not workers.
class injector {
 public:
  void push(node_core* n) noexcept {
    node_core* head = head_.load(std::memory_order_relaxed);
    do n->link = head;
    while (!head_.compare_exchange_weak(head, n, std::memory_order_release,
                                        std::memory_order_relaxed));
  }
  // Takes everything, oldest first.
  node_core* take_all() noexcept {
    node_core* list = head_.exchange(nullptr, std::memory_order_acquire);
    node_core* reversed = nullptr;
    while (list) {
      node_core* next = list->link;
      list->link = reversed;
      reversed = list;
      list = next;
    }
    return reversed;
  }
  bool looks_empty() const noexcept { return head_.load(std::memory_order_relaxed) == nullptr; }

 private:
  std::atomic<node_core*> head_{nullptr};
};

// The flow layer's part of one runtime.
struct flow_runtime {
  explicit flow_runtime(sched::runtime_state* r);
  ~flow_runtime();

  sched::runtime_state* const rt;
  std::vector<std::unique_ptr<flow_worker>> workers;
  alignas(64) std::atomic<int> high_pending{0};  // high-priority nodes runnable anywhere
  alignas(64) injector normal_in;
  alignas(64) injector high_in;

  // Dynamic node storage: slabs, and a shared list that evens out workers.
  std::mutex pool_mutex;
  node_core* spare_nodes = nullptr;
  std::uint32_t spare_count = 0;
  std::vector<void*> slabs;
};

// Where the caller runs: on a worker (fw set) or on another thread.
struct place {
  flow_worker* fw;
  flow_runtime* frt;
};

// --- flow_runtime.cpp
flow_worker* worker_state(sched::worker* w) noexcept;
// The caller's place; throws flow_error(EPERM) without a running runtime.
place here();

// --- scheduling.cpp (make_runnable itself is in hot_path.hpp)
void make_runnable_slow(const place& at, node_core& n);
node_core* next_node(flow_worker* fw);
// Puts next_local on the deque, where thieves and later calls find it.
void hand_back_next_local(flow_worker* fw) noexcept;
bool any_runnable(flow_runtime* frt) noexcept;

// --- credits (scheduling.cpp; take_credit in hot_path.hpp)
inline constexpr std::int64_t credit_batch = 64;  // drawn from a graph's count at a time
void switch_credit_graph(flow_worker* fw, graph_state* g) noexcept;
void return_credit(flow_worker* fw) noexcept;
void flush_credits(flow_worker* fw) noexcept;

// --- continuation.cpp (continue_core itself is in hot_path.hpp)
// Exclusive nodes, and ports given to non-exclusive ones.
void continue_special(const place& at, node_core& n, std::uint64_t value, unsigned port);
[[noreturn, gnu::cold]] void below_zero(const node_core& n);

// --- runner.cpp
void run_node(flow_worker* fw, node_core& n);

// --- node_pool.cpp
node_core& take_dynamic_node(const place& at);
// After its activation (the body is destroyed here).
void recycle_dynamic_node(flow_worker* fw, node_core& n) noexcept;
// From any thread (a node whose body could not be installed, or never ran).
void give_back_dynamic_node(const place& at, node_core& n) noexcept;

}  // namespace ito::flow::detail

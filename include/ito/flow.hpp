// SPDX-License-Identifier: Apache-2.0
// ito::flow — zero-wait, run-to-completion tasks on the same workers
// as ULTs. A node is a body plus a synchronisation counter; continuing a node
// decrements its counter and at 0 the node becomes runnable. Bodies never
// wait: what would wait is split into a request node and a node that receives
// the result (split phase). See docs/FLOW.md for the model and the numbers.
//
//   ito::flow::graph g;
//   auto& a = g.add("a", [](ito::flow::context&) { ... });
//   auto& b = g.add("b", [] { ... });
//   g.edge(a, b);      // b's counter = 1 (its number of predecessors)
//   g.run_and_wait();  // from a ULT: suspends until the graph is idle
//
// Everything here needs a running ito::runtime. Node bodies run on a worker's
// scheduler stack, not in a ULT: ito::in_ult() is false there, and a body must
// not block (no join, no lock waits); ito::create_thread does work in a body.
#pragma once

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <new>
#include <string>
#include <type_traits>
#include <utility>

#include "ito/error.hpp"

namespace ito::flow {

class graph;
class node;
class context;
class completion;

// A high-priority node runs at the next node boundary of some worker, before
// every normal node that is already runnable (quasi-preemption).
enum class priority : std::uint8_t { normal = 0, high = 1 };

// Bad flow input or misuse. code(): ELOOP (a cycle), ERANGE (a counter
// continued below zero), EINVAL (bad argument), ENOSPC (an exclusive node's
// queue is full), EBUSY (the graph is running), EDEADLK (waiting inside a
// node body), EPERM (no runtime).
class flow_error : public usage_error {
 public:
  using usage_error::usage_error;
};

struct node_options {
  // The counter's reset value: -1 means the number of static predecessors
  // (edges into the node). An exclusive node has one input port per counter
  // unit (at least one).
  int counter = -1;
  // Never runs twice at once: continuations that arrive while it runs, or
  // while its ports already hold a value, queue in order (self-continuation).
  bool exclusive = false;
  priority prio = priority::normal;
  // Exclusive nodes: queued continuations each port holds (rounded up to a
  // power of two). A continuation past that throws flow_error(ENOSPC).
  unsigned queue_capacity = 1024;
};

}  // namespace ito::flow

#include "ito/detail/flow_node.hpp"

namespace ito::flow {

// Continues `n` (decrements its counter; at 0 it becomes runnable). From a
// node body, a ULT, or any thread while the runtime runs. A non-exclusive
// node keeps the value of the continuation that releases it (ctx.value());
// an exclusive node keeps one value per port. Continuing a node whose counter
// is already 0 throws flow_error(ERANGE) (exclusive nodes queue instead).
inline void continue_to(node& n) { detail::continue_node(n, 0, 0); }
inline void continue_to(node& n, std::uint64_t value, unsigned port = 0) {
  detail::continue_node(n, value, port);
}
template <class T>
void continue_to(node& n, T* pointer, unsigned port = 0) {
  detail::continue_node(n, static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(pointer)),
                        port);
}

// Waits for a node's activation to complete (node::completion()). A ULT
// suspends (its worker runs other work); a plain OS thread sleeps on a futex;
// a node body may not wait (flow_error(EDEADLK)). Copyable; valid as long as
// its node's graph lives. It carries no value: not a future (docs, "Futures").
class completion {
 public:
  completion() = default;
  bool valid() const noexcept { return state_ != nullptr; }
  bool ready() const;
  void wait() const;

 private:
  friend class node;
  completion(detail::node_extra* s, std::uint64_t target) noexcept
      : state_(s), target_(target) {}
  detail::node_extra* state_ = nullptr;
  std::uint64_t target_ = 0;
};

// Its former name, for one release.
using future [[deprecated("use ito::flow::completion")]] = completion;

class node {
 public:
  node(const node&) = delete;
  node& operator=(const node&) = delete;

  // Its name, or "node#<index>" (dynamic nodes: "(dynamic node)").
  std::string name() const;
  // Continuations still missing before it runs (exclusive: ports still empty).
  int counter() const noexcept;
  int reset_value() const noexcept { return core_.reset; }
  bool exclusive() const noexcept {
    return core_.flags.load(std::memory_order_relaxed) & detail::flag_exclusive;
  }
  priority prio() const noexcept;
  void set_priority(priority p) noexcept;
  graph& owner() const noexcept;
  // Ready once an activation that ends after this call has completed its body.
  // Static nodes only (a dynamic node is recycled after its one activation).
  flow::completion completion();

 private:
  friend struct detail::access;
  node() = default;
  ~node() = default;
  detail::node_core core_;
};

// What a running body sees.
class context {
 public:
  // The value of the continuation that released this activation; for an
  // exclusive node, the value queued on `port` (one per port and activation).
  std::uint64_t value(unsigned port = 0) const;
  template <class T>
  T* pointer(unsigned port = 0) const {
    return reinterpret_cast<T*>(static_cast<std::uintptr_t>(value(port)));
  }
  node& self() const noexcept { return *self_; }
  graph& owner() const noexcept;
  unsigned worker_index() const noexcept;

  void continue_to(node& n) const { detail::continue_node(n, 0, 0); }
  void continue_to(node& n, std::uint64_t v, unsigned port = 0) const {
    detail::continue_node(n, v, port);
  }
  template <class T>
  void continue_to(node& n, T* p, unsigned port = 0) const {
    flow::continue_to(n, p, port);
  }
  // Dynamic nodes of this node's graph (see graph::spawn / graph::make_node).
  template <class F>
  void spawn(F&& body, priority p = priority::normal) const;
  template <class F>
  node& make_node(F&& body, int counter, priority p = priority::normal) const;

 private:
  friend struct detail::access;
  context(detail::flow_worker* fw, node* self, const std::uint64_t* values, unsigned count) noexcept
      : fw_(fw), self_(self), values_(values), count_(count) {}
  detail::flow_worker* fw_;
  node* self_;
  const std::uint64_t* values_;
  unsigned count_;
};

// Owns static nodes and their edges; counts the activations in flight so that
// wait() knows when the graph is idle. Not movable (nodes point to it).
class graph {
 public:
  graph();
  // Waits until the graph is idle (if a runtime still runs), then frees it.
  ~graph();
  graph(const graph&) = delete;
  graph& operator=(const graph&) = delete;

  // A static node. `body` is callable as body(context&) or body().
  template <class F>
  node& add(std::string name, F&& body, node_options o = {}) {
    detail::node_core& c = detail::allocate_static(state_, o);
    try {
      detail::install_body(c, std::forward<F>(body));
    } catch (...) {
      detail::abandon_static(state_, c);
      throw;
    }
    return detail::commit_static(state_, c, std::move(name), o);
  }
  template <class F>
  node& add(F&& body, node_options o = {}) {
    return add(std::string(), std::forward<F>(body), o);
  }
  // A static edge: when `from` completes an activation it continues `to`
  // (on `port` for an exclusive `to`; -1: the next free port).
  void edge(node& from, node& to, int port = -1);

  // Builds the successor lists and counters; rejects a cycle with
  // flow_error(ELOOP) naming it ("a -> b -> a"). run() seals as needed.
  // Sealing again after add/edge keeps what nodes have received: a node
  // continued part way keeps its continuations, a new edge into it adds one
  // to what it still waits for (docs/FLOW.md, "Changing an idle graph").
  void seal();
  // Starts a run: continues every node whose counter is 0. Throws
  // flow_error(EBUSY) while activations of an earlier run are in flight.
  void run();
  // Until no activation of the graph is runnable or running (and no hold()
  // is outstanding). Rethrows the first exception a body threw since the
  // last wait().
  void wait();
  void run_and_wait() {
    run();
    wait();
  }
  // True when nothing is in flight.
  bool idle() const noexcept;

  // A dynamic node, runnable at once. Used once, then recycled (so no
  // reference is returned: it may have run already).
  template <class F>
  void spawn(F&& body, priority p = priority::normal) {
    make_dynamic(std::forward<F>(body), 0, p);
  }
  // A dynamic node that runs after `counter` (>= 1) continuations; the
  // reference is valid until then.
  template <class F>
  node& make_node(F&& body, int counter, priority p = priority::normal) {
    if (counter < 1) throw flow_error(EINVAL, "ito::flow: graph::make_node needs a counter >= 1");
    return make_dynamic(std::forward<F>(body), counter, p);
  }

  // An activation outside the runtime (a device request in flight): the graph
  // is not idle until the matching release().
  void hold();
  void release();

  std::size_t size() const noexcept;  // static nodes

 private:
  friend struct detail::access;
  template <class F>
  node& make_dynamic(F&& body, int counter, priority p) {
    detail::node_core& c = detail::allocate_dynamic(state_, counter);
    try {
      detail::install_body(c, std::forward<F>(body));
    } catch (...) {
      detail::abandon_dynamic(c);
      throw;
    }
    return detail::commit_dynamic(c, counter, p);
  }
  detail::graph_state* state_;
};

template <class F>
void context::spawn(F&& body, priority p) const {
  owner().spawn(std::forward<F>(body), p);
}
template <class F>
node& context::make_node(F&& body, int counter, priority p) const {
  return owner().make_node(std::forward<F>(body), counter, p);
}

}  // namespace ito::flow

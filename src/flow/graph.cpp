// SPDX-License-Identifier: Apache-2.0
// graph: building static nodes and edges, run, wait, hold/release, teardown.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <new>

#include "flow/hot_path.hpp"
#include "sched/scheduler.hpp"

namespace ito::flow::detail {
namespace {

void require_idle(const graph_state& g, const char* what) {
  if (g.in_flight.outstanding() != 0)
    throw flow_error(EBUSY, std::string("ito::flow: ") + what + " while the graph is running");
}

void noop_body(void*, context*) {}

}  // namespace

std::string graph_state::name_of(const node_core& n) const {
  if (n.flags.load(std::memory_order_relaxed) & flag_dynamic) return "(dynamic node)";
  {
    std::lock_guard lock(names_mutex);
    auto it = names.find(n.index);
    if (it != names.end()) return it->second;
  }
  return "node#" + std::to_string(n.index);
}

void graph_state::record_error(std::exception_ptr e) noexcept {
  std::lock_guard lock(error_mutex);
  if (!error) error = std::move(e);
}

node_core& allocate_static(graph_state* g, const node_options& o) {
  if (o.counter < -1) throw flow_error(EINVAL, "ito::flow: node_options::counter must be >= -1");
  if (o.exclusive && o.counter > static_cast<int>(max_ports))
    throw flow_error(EINVAL, "ito::flow: an exclusive node has at most " +
                                 std::to_string(max_ports) + " ports");
  if (o.exclusive && o.queue_capacity == 0)
    throw flow_error(EINVAL, "ito::flow: node_options::queue_capacity must be >= 1");
  std::lock_guard lock(g->build_mutex);
  require_idle(*g, "adding a node");
  if (g->count % graph_state::chunk_nodes == 0) {
    void* chunk = ::operator new[](sizeof(node_core) * graph_state::chunk_nodes,
                                   std::align_val_t{alignof(node_core)});
    g->chunks.push_back(static_cast<node_core*>(chunk));
  }
  auto* slot = reinterpret_cast<unsigned char*>(g->chunks.back()) +
               sizeof(node_core) * (g->count % graph_state::chunk_nodes);
  node_core& c = access::construct(slot);
  c.index = g->count++;
  c.owner = g;
  c.body = &noop_body;  // until the real body is installed
  g->requests.emplace_back();
  g->sealed.store(false, std::memory_order_relaxed);
  return c;
}

void abandon_static(graph_state*, node_core& c) noexcept {
  // Its slot stays (indices are dense); it runs nothing.
  c.body = &noop_body;
  c.destroy = nullptr;
}

node& commit_static(graph_state* g, node_core& c, std::string name, const node_options& o) {
  std::lock_guard lock(g->build_mutex);
  std::uint16_t flags = 0;
  if (o.exclusive) flags |= flag_exclusive;
  if (o.prio == priority::high) flags |= flag_high;
  c.flags.store(flags, std::memory_order_relaxed);
  g->requests[c.index] = {o.counter, o.queue_capacity};
  if (o.counter >= 0 && !o.exclusive) {
    c.reset = o.counter;
    c.counter.store(o.counter, std::memory_order_relaxed);
  }
  if (o.exclusive) c.extra.store(new node_extra, std::memory_order_release);
  if (!name.empty()) {
    std::lock_guard names_lock(g->names_mutex);
    g->names[c.index] = std::move(name);
  }
  g->sealed.store(false, std::memory_order_relaxed);
  return access::of(c);
}

}  // namespace ito::flow::detail

namespace ito::flow {

using detail::access;
using detail::graph_state;
using detail::node_core;

graph::graph() : state_(new graph_state(this)) {}

graph::~graph() {
  graph_state* g = state_;
  if (!g->in_flight.idle() && sched::g_runtime.load(std::memory_order_acquire)) {
    sched::worker* w = sched::current_worker();
    if (w && !w->current) sched::fatal("ito::flow: a graph destroyed inside a node body while it runs");
    g->in_flight.wait();
  }
  for (std::uint32_t i = 0; i < g->count; ++i) {
    node_core& c = g->at(i);
    if (c.destroy) c.destroy(c.storage, nullptr);
    delete c.extra.load(std::memory_order_relaxed);
    access::destroy(c);
  }
  for (node_core* chunk : g->chunks)
    ::operator delete[](chunk, std::align_val_t{alignof(node_core)});
  delete g;
}

void graph::edge(node& from, node& to, int port) {
  node_core& f = access::core(from);
  node_core& t = access::core(to);
  if (f.owner != state_ || t.owner != state_ || detail::is_dynamic(f) || detail::is_dynamic(t))
    throw flow_error(EINVAL, "ito::flow: graph::edge joins static nodes of this graph only");
  if (port < -1 || port >= static_cast<int>(detail::max_ports))
    throw flow_error(EINVAL, "ito::flow: graph::edge: bad port " + std::to_string(port));
  std::lock_guard lock(state_->build_mutex);
  detail::require_idle(*state_, "adding an edge");
  state_->edges.push_back({f.index, t.index, port});
  state_->sealed.store(false, std::memory_order_relaxed);
}

void graph::seal() { state_->seal_if_needed(); }

void graph::run() {
  graph_state* g = state_;
  std::lock_guard lock(g->build_mutex);
  g->seal_locked();
  detail::require_idle(*g, "graph::run");
  const detail::place at = detail::here();
  // The run's own credit: the graph cannot look idle while sources are queued.
  g->in_flight.add(1);
  for (node_core* s : g->sources) detail::make_runnable(at, *s);
  g->in_flight.sub(1);
}

void graph::wait() {
  state_->in_flight.wait();
  std::exception_ptr e;
  {
    std::lock_guard lock(state_->error_mutex);
    e = std::exchange(state_->error, nullptr);
  }
  if (e) std::rethrow_exception(e);
}

bool graph::idle() const noexcept { return state_->in_flight.idle(); }

void graph::hold() { state_->in_flight.add(1); }

void graph::release() {
  if (state_->in_flight.outstanding() == 0)
    throw flow_error(EINVAL, "ito::flow: graph::release without a hold");
  state_->in_flight.sub(1);
}

std::size_t graph::size() const noexcept { return state_->count; }

}  // namespace ito::flow

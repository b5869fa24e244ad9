// SPDX-License-Identifier: Apache-2.0
// node, completion and context members, and dynamic node creation.
#include <cerrno>

#include "flow/hot_path.hpp"

namespace ito::flow {

using detail::access;
using detail::node_core;

std::string node::name() const { return core_.owner->name_of(core_); }

int node::counter() const noexcept {
  if (exclusive()) {
    detail::node_extra* x = core_.extra.load(std::memory_order_acquire);
    return x && x->exclusive ? static_cast<int>(x->exclusive->empty_ports()) : core_.reset;
  }
  // A rejected (below zero) continuation may leave it negative until the
  // node starts and re-arms it: report that as 0.
  const int c = core_.counter.load(std::memory_order_relaxed);
  return c < 0 ? 0 : c;
}

priority node::prio() const noexcept {
  return core_.flags.load(std::memory_order_relaxed) & detail::flag_high ? priority::high
                                                                         : priority::normal;
}

void node::set_priority(priority p) noexcept {
  if (p == priority::high) core_.flags.fetch_or(detail::flag_high, std::memory_order_relaxed);
  else core_.flags.fetch_and(static_cast<std::uint16_t>(~detail::flag_high), std::memory_order_relaxed);
}

graph& node::owner() const noexcept { return *core_.owner->self; }

completion node::completion() {
  if (detail::is_dynamic(core_))
    throw flow_error(EINVAL, "ito::flow: node::completion: a dynamic node is recycled after its "
                             "activation; wait on a static node it continues instead");
  detail::node_extra* x = core_.extra.load(std::memory_order_acquire);
  if (!x) {
    auto* fresh = new detail::node_extra;
    if (core_.extra.compare_exchange_strong(x, fresh, std::memory_order_acq_rel)) x = fresh;
    else delete fresh;
  }
  return flow::completion(x, x->done.observe());
}

bool completion::ready() const {
  if (!state_) throw flow_error(EINVAL, "ito::flow::completion::ready: an empty completion");
  return state_->done.reached(target_);
}

void completion::wait() const {
  if (!state_) throw flow_error(EINVAL, "ito::flow::completion::wait: an empty completion");
  state_->done.wait(target_);
}

std::uint64_t context::value(unsigned port) const {
  if (port >= count_)
    throw flow_error(EINVAL, "ito::flow::context::value: port " + std::to_string(port) +
                                 ", but the node has " + std::to_string(count_));
  return values_[port];
}

graph& context::owner() const noexcept { return self_->owner(); }

unsigned context::worker_index() const noexcept { return fw_->index; }

namespace detail {

node_core& allocate_dynamic(graph_state* g, int counter) {
  if (counter < 0) throw flow_error(EINVAL, "ito::flow: a dynamic node's counter must be >= 0");
  // Sealed before anything of the graph can be in flight (seal needs it idle).
  if (!g->sealed.load(std::memory_order_acquire)) g->seal_if_needed();
  node_core& c = take_dynamic_node(here());
  c.owner = g;
  c.destroy = nullptr;  // nothing to destroy until a body is installed
  return c;
}

node& commit_dynamic(node_core& c, int counter, priority p) {
  std::uint16_t flags = flag_dynamic;
  if (p == priority::high) flags |= flag_high;
  c.flags.store(flags, std::memory_order_relaxed);
  c.reset = counter;
  c.counter.store(counter, std::memory_order_relaxed);
  c.value = 0;
  c.successors = nullptr;
  c.successor_count = 0;
  c.ports = 0;
  c.index = 0;
  c.extra.store(nullptr, std::memory_order_relaxed);
  // Whoever gets the node from us learns of it through some release/acquire
  // (a deque push, a captured pointer handed to a node): that publishes these.
  if (counter == 0) make_runnable(here(), c);
  return access::of(c);
}

void abandon_dynamic(node_core& c) noexcept {
  c.destroy = nullptr;
  give_back_dynamic_node(here(), c);  // here() worked a moment ago in allocate_dynamic
}

}  // namespace detail
}  // namespace ito::flow

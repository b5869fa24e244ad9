// SPDX-License-Identifier: Apache-2.0
// continue_to: decrement a counter (or queue on an exclusive node's port) and
// make the node runnable when it is due.
#include <cerrno>
#include <string>

#include "flow/hot_path.hpp"

namespace ito::flow::detail {
namespace {

void continue_exclusive(const place& at, node_core& n, std::uint64_t value, unsigned port) {
  exclusive_state& ex = *n.extra.load(std::memory_order_acquire)->exclusive;
  if (port >= ex.ports)
    throw flow_error(EINVAL, "ito::flow: node '" + n.owner->name_of(n) + "' has " +
                                 std::to_string(ex.ports) + " port(s); continued on port " +
                                 std::to_string(port));
  if (!ex.rings[port].push(value))
    throw flow_error(ENOSPC, "ito::flow: exclusive node '" + n.owner->name_of(n) + "': port " +
                                 std::to_string(port) + " already queues " +
                                 std::to_string(ex.rings[port].capacity()) +
                                 " continuations (raise node_options::queue_capacity)");
  // Whoever raises `pending` from 0 owns the node: schedule it.
  if (ex.pending.fetch_add(1, std::memory_order_acq_rel) == 0) make_runnable(at, n);
}

}  // namespace

void below_zero(const node_core& n) {
  throw flow_error(ERANGE, "ito::flow: node '" + n.owner->name_of(n) +
                               "' was continued below zero: its counter is already 0 (reset value " +
                               std::to_string(n.reset) +
                               "), so it is runnable and has not started yet; a node takes the "
                               "continuations of its next activation only once it has started "
                               "(make it exclusive to queue them instead)");
}

void continue_special(const place& at, node_core& n, std::uint64_t value, unsigned port) {
  if (n.flags.load(std::memory_order_relaxed) & flag_exclusive) {
    continue_exclusive(at, n, value, port);
    return;
  }
  throw flow_error(EINVAL, "ito::flow: node '" + n.owner->name_of(n) +
                               "' is not exclusive and has no ports; continued on port " +
                               std::to_string(port));
}

void continue_node(node& target, std::uint64_t value, unsigned port) {
  node_core& n = access::core(target);
  // A graph used without run() (reactive use) is sealed by its first continuation.
  if (!n.owner->sealed.load(std::memory_order_acquire)) n.owner->seal_if_needed();
  continue_core(here(), n, value, port);
}

}  // namespace ito::flow::detail

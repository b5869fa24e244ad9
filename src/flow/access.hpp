// SPDX-License-Identifier: Apache-2.0
// Conversions between the public flow types and the runtime's view of them.
#pragma once

#include <cstdint>
#include <new>

#include "ito/flow.hpp"

namespace ito::flow::detail {

struct access {
  static node_core& core(node& n) noexcept { return n.core_; }
  static const node_core& core(const node& n) noexcept { return n.core_; }
  // node is standard-layout with core_ as its only member: the addresses match.
  static node& of(node_core& c) noexcept { return *std::launder(reinterpret_cast<node*>(&c)); }
  static node_core& construct(void* where) { return (::new (where) node())->core_; }
  static void destroy(node_core& c) noexcept { of(c).~node(); }
  static context make_context(flow_worker* fw, node_core& self, const std::uint64_t* values,
                              unsigned count) noexcept {
    return context(fw, &of(self), values, count);
  }
  static graph_state* state(const graph& g) noexcept { return g.state_; }
};

}  // namespace ito::flow::detail

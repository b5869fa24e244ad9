// SPDX-License-Identifier: Apache-2.0
// Reserving the iso-address region: every rank maps the application view at
// the same address (tried at a few candidates far from where Linux puts
// heaps, libraries and stacks; all ranks agree on the first that fits on
// every one), plus an alias of the same memory anywhere. Nothing is committed:
// pages exist once touched. The memory is the node's (node_memory.hpp).
#pragma once

#include <cstddef>

#include "distributed/node_memory.hpp"

namespace ito::dist::detail {

struct iso_region;

// Collective. Exits with an `ito: dsm:` message when no candidate address
// fits on every rank, or the memory cannot be had. `shape`: what a node is
// (ITO_DIST_NODE); `node` says what came out.
void reserve_region(std::size_t bytes, node_shape shape, iso_region& r, node_info& node);
void release_region(iso_region& r) noexcept;

}  // namespace ito::dist::detail

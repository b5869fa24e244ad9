// SPDX-License-Identifier: Apache-2.0
// Port rings and exclusive state: construction (the rest is inline).
#include "flow/exclusive.hpp"

namespace ito::flow::detail {

void port_ring::init(unsigned capacity) {
  std::uint64_t size = 2;
  while (size < capacity) size <<= 1;
  cells_ = std::make_unique<cell[]>(size);
  for (std::uint64_t i = 0; i < size; ++i) cells_[i].seq.store(i, std::memory_order_relaxed);
  mask_ = size - 1;
}

exclusive_state::exclusive_state(unsigned port_count, unsigned capacity)
    : ports(port_count), rings(std::make_unique<port_ring[]>(port_count)) {
  for (unsigned p = 0; p < ports; ++p) rings[p].init(capacity);
}

}  // namespace ito::flow::detail

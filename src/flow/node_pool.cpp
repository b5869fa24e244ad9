// SPDX-License-Identifier: Apache-2.0
// Storage for dynamic nodes (made by running nodes): per-worker LIFO lists,
// evened out through one shared list, refilled from slabs. A worker that
// makes as many nodes as it runs never takes the lock.
#include <mutex>
#include <new>

#include "flow/state.hpp"

namespace ito::flow::detail {
namespace {

constexpr std::uint32_t slab_nodes = 256;
constexpr std::uint32_t transfer = 64;            // nodes moved to or from the shared list at once
constexpr std::uint32_t keep_at_most = 4 * transfer;  // per worker

// With the pool lock held: one node from the shared list, else a new slab.
node_core* take_shared(flow_runtime* frt) {
  if (!frt->spare_nodes) {
    void* slab = ::operator new[](sizeof(node_core) * slab_nodes, std::align_val_t{alignof(node_core)});
    frt->slabs.push_back(slab);
    auto* nodes = static_cast<unsigned char*>(slab);
    for (std::uint32_t i = 0; i < slab_nodes; ++i) {
      node_core& c = access::construct(nodes + i * sizeof(node_core));
      c.link = frt->spare_nodes;
      frt->spare_nodes = &c;
    }
    frt->spare_count += slab_nodes;
  }
  node_core* n = frt->spare_nodes;
  frt->spare_nodes = n->link;
  --frt->spare_count;
  return n;
}

}  // namespace

node_core& take_dynamic_node(const place& at) {
  flow_worker* fw = at.fw;
  if (fw && fw->free_nodes) {
    node_core* n = fw->free_nodes;
    fw->free_nodes = n->link;
    --fw->free_count;
    return *n;
  }
  std::lock_guard lock(at.frt->pool_mutex);
  node_core* n = take_shared(at.frt);
  if (fw) {  // take a batch, so the next ones cost no lock
    for (std::uint32_t i = 1; i < transfer; ++i) {
      node_core* extra = take_shared(at.frt);
      extra->link = fw->free_nodes;
      fw->free_nodes = extra;
      ++fw->free_count;
    }
  }
  return *n;
}

void give_back_dynamic_node(const place& at, node_core& n) noexcept {
  if (at.fw) {
    recycle_dynamic_node(at.fw, n);
    return;
  }
  if (n.destroy) n.destroy(n.storage, nullptr);
  std::lock_guard lock(at.frt->pool_mutex);
  n.link = at.frt->spare_nodes;
  at.frt->spare_nodes = &n;
  ++at.frt->spare_count;
}

void recycle_dynamic_node(flow_worker* fw, node_core& n) noexcept {
  if (n.destroy) n.destroy(n.storage, nullptr);
  n.link = fw->free_nodes;
  fw->free_nodes = &n;
  if (++fw->free_count <= keep_at_most) return;
  // A worker that runs more nodes than it makes: hand a batch to the others.
  node_core* first = fw->free_nodes;
  node_core* last = first;
  for (std::uint32_t i = 1; i < transfer; ++i) last = last->link;
  fw->free_nodes = last->link;
  fw->free_count -= transfer;
  std::lock_guard lock(fw->frt->pool_mutex);
  last->link = fw->frt->spare_nodes;
  fw->frt->spare_nodes = first;
  fw->frt->spare_count += transfer;
}

}  // namespace ito::flow::detail

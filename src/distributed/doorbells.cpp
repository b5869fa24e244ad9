// SPDX-License-Identifier: Apache-2.0
#include "distributed/doorbells.hpp"

#include <sys/mman.h>
#include <time.h>

#include <climits>
#include <vector>

#include "distributed/node_memory.hpp"

namespace ito::dist::detail {

std::size_t doorbell_board::slots() noexcept { return (node_page_bytes - doorbells_at) / line; }

os::futex_word* doorbell_board::slot(int index_in_node) const noexcept {
  const std::size_t i = static_cast<std::size_t>(index_in_node) % slots();
  return reinterpret_cast<os::futex_word*>(page_ + doorbells_at + i * line);
}

void doorbell_board::ring(os::futex_word* bell) noexcept {
  // Every sleeper: where ranks share a slot, the one rung may not be first.
  if (bell->exchange(1, std::memory_order_acq_rel) == 0) os::futex_wake_shared(bell, INT_MAX);
}

void doorbell_board::wait(os::futex_word* bell, std::int64_t timeout_ns) noexcept {
  if (bell->exchange(0, std::memory_order_acq_rel) != 0) return;
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  os::futex_wait_until_shared(bell, 0, now.tv_sec * 1'000'000'000LL + now.tv_nsec + timeout_ns);
}

namespace {

struct bells {
  void* page = nullptr;
  os::futex_word* own = nullptr;
  std::vector<os::futex_word*> of_rank;  // null: not a node mate (or this rank)
};
bells g;

}  // namespace

void open_doorbells(int node_fd, std::size_t region_bytes, const node_info& node, int rank) {
  close_doorbells();
  if (node.ranks_in_node < 2 || node_fd < 0) return;
  void* page = mmap(nullptr, node_page_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, node_fd,
                    static_cast<off_t>(node_page_offset(region_bytes)));
  if (page == MAP_FAILED) return;  // no doorbells: node mates wait for the poll
  const doorbell_board board(page);
  g.page = page;
  g.of_rank.assign(node.node_of_rank.size(), nullptr);
  const int my_node = node.node_of_rank[static_cast<std::size_t>(rank)];
  int index = 0;
  for (std::size_t r = 0; r < node.node_of_rank.size(); ++r) {
    if (node.node_of_rank[r] != my_node) continue;
    os::futex_word* bell = board.slot(index++);
    if (static_cast<int>(r) == rank)
      g.own = bell;
    else
      g.of_rank[r] = bell;
  }
}

void close_doorbells() noexcept {
  if (g.page) munmap(g.page, node_page_bytes);
  g = bells{};
}

os::futex_word* own_doorbell() noexcept { return g.own; }

void ring_doorbell(int rank) noexcept {
  if (rank < 0 || static_cast<std::size_t>(rank) >= g.of_rank.size()) return;
  if (os::futex_word* bell = g.of_rank[static_cast<std::size_t>(rank)])
    doorbell_board::ring(bell);
}

}  // namespace ito::dist::detail

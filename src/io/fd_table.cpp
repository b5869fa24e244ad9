// SPDX-License-Identifier: Apache-2.0
#include "io/fd_table.hpp"

#include <new>

#include "io/fork_child.hpp"

namespace ito::detail {
namespace {

constexpr unsigned chunk_bits = 12;  // 4096 entries (256 KiB) per chunk
constexpr unsigned top_size = 1024;  // 2^22 descriptors in all
std::atomic<fd_state*> g_chunks[top_size];

}  // namespace

fd_state* fd_lookup(int fd) noexcept {
  if (fd < 0) return nullptr;
  const auto n = static_cast<unsigned>(fd);
  const unsigned top = n >> chunk_bits;
  if (top >= top_size) return nullptr;
  fd_state* chunk = g_chunks[top].load(std::memory_order_acquire);
  if (!chunk) [[unlikely]] {
    // First descriptor in this range: racing threads may both allocate; the
    // loser frees its chunk. Chunks live until the process ends.
    auto* fresh = new (std::nothrow) fd_state[std::size_t{1} << chunk_bits];
    if (!fresh) return nullptr;
    if (g_chunks[top].compare_exchange_strong(chunk, fresh, std::memory_order_acq_rel)) {
      chunk = fresh;
    } else {
      delete[] fresh;
    }
  }
  return &chunk[n & ((1u << chunk_bits) - 1)];
}

fd_state* fd_find(int fd) noexcept {
  if (fd < 0) return nullptr;
  const auto n = static_cast<unsigned>(fd);
  if ((n >> chunk_bits) >= top_size) return nullptr;
  fd_state* chunk = g_chunks[n >> chunk_bits].load(std::memory_order_acquire);
  return chunk ? &chunk[n & ((1u << chunk_bits) - 1)] : nullptr;
}

void fd_table_after_fork_in_child() noexcept {
  // Only this thread exists: plain writes, and a lock some other thread held
  // at the fork is simply made free.
  for (auto& top : g_chunks) {
    fd_state* chunk = top.load(std::memory_order_relaxed);
    if (!chunk) continue;
    for (std::size_t i = 0; i < (std::size_t{1} << chunk_bits); ++i) {
      fd_state& st = chunk[i];
      new (&st.lock) spinlock;
      st.waiters = nullptr;
      st.ready = 0;
      st.registered.store(false, std::memory_order_relaxed);
    }
  }
}

}  // namespace ito::detail

// SPDX-License-Identifier: Apache-2.0
#include "sched/handles.hpp"

#include <cerrno>
#include <cstdlib>
#include <mutex>
#include <new>

#include "sched/scheduler.hpp"

namespace ito::sched::handles {
namespace {

constexpr int index_bits = 24;
constexpr value index_mask = (value{1} << index_bits) - 1;
constexpr value claimed_bit = value{1} << 63;
constexpr unsigned chunk_bits = 12;
constexpr unsigned chunk_slots = 1u << chunk_bits;
constexpr unsigned max_chunks = 1u << (index_bits - chunk_bits);

struct slot {
  // The live handle (| claimed_bit once claimed), or 0 while free. Readers
  // check it before and after reading `owner`, as a sequence lock.
  std::atomic<value> live{0};
  std::atomic<ult*> owner{nullptr};
  value reuses = 0;        // the reuse count its next handle gets (free slots only)
  // The POSIX layer's cancellation word of the thread (posix_cancel.cpp):
  // per handle, so it starts at 0 for every thread that gets one.
  std::atomic<std::uint32_t> cancel{0};
  std::uint32_t next = 0;  // free-list link
  // The POSIX layer's signal state of the thread (posix_thread_signals.cpp):
  // made on first use, kept for the slot's later handles, which it tells
  // apart itself. Null for a slot no thread with signal state ever had.
  std::atomic<void*> signals{nullptr};
};

std::atomic<slot*> g_chunks[max_chunks];

// Free slots: a list under a lock (taken once per batch of spawns, never on a
// join) and a small stack per worker in front of it. Slots from g_fresh on
// were never handed out: a chunk is zeroed memory from calloc, and a slot is
// constructed as it is first handed out, so a process that asks for one
// handle (pthread_self on the main thread) touches one page of the chunk's
// 32, not all of them.
std::mutex g_lock;
std::uint32_t g_free = 0;  // head of the free list, 0 = empty
unsigned g_chunk_count = 0;
std::atomic<std::uint32_t> g_fresh{1};  // index 0 is never used

slot& at(std::uint32_t index) noexcept {
  return g_chunks[index >> chunk_bits].load(std::memory_order_acquire)[index & (chunk_slots - 1)];
}

// The slot an index names, or null if no such slot was ever handed out.
slot* find_slot(value h) noexcept {
  auto index = static_cast<std::uint32_t>(h & index_mask);
  if (index == 0 || index >= g_fresh.load(std::memory_order_acquire)) return nullptr;
  return &at(index);
}

// A free index: from the free list, else the next fresh slot (constructed
// here), else from a new chunk; 0 when none can be had. Locked.
std::uint32_t take_locked() noexcept {
  if (g_free != 0) {
    std::uint32_t index = g_free;
    g_free = at(index).next;
    return index;
  }
  const std::uint32_t index = g_fresh.load(std::memory_order_relaxed);
  if ((index >> chunk_bits) >= max_chunks) return 0;
  if ((index >> chunk_bits) == g_chunk_count) {
    void* chunk = std::calloc(chunk_slots, sizeof(slot));
    if (!chunk) return 0;
    g_chunks[g_chunk_count++].store(static_cast<slot*>(chunk), std::memory_order_release);
  }
  slot* s = new (&at(index)) slot;
  s->reuses = 1;
  g_fresh.store(index + 1, std::memory_order_release);
  return index;
}

// Moves up to `want` free slots into the worker's stack.
void refill(worker* w, unsigned want) noexcept {
  std::lock_guard<std::mutex> hold(g_lock);
  while (w->handle_cache_count < want) {
    const std::uint32_t index = take_locked();
    if (index == 0) return;
    w->handle_cache[w->handle_cache_count++] = index;
  }
}

void give_back_locked(std::uint32_t index) noexcept {
  at(index).next = g_free;
  g_free = index;
}

std::uint32_t take_index() noexcept {
  worker* w = current_worker();
  if (!w) {
    std::lock_guard<std::mutex> hold(g_lock);
    return take_locked();
  }
  if (w->handle_cache_count == 0) refill(w, worker::handle_cache_size / 2);
  return w->handle_cache_count ? w->handle_cache[--w->handle_cache_count] : 0;
}

void put_index(std::uint32_t index) noexcept {
  worker* w = current_worker();
  if (w && w->handle_cache_count < worker::handle_cache_size) {
    w->handle_cache[w->handle_cache_count++] = index;
    return;
  }
  std::lock_guard<std::mutex> hold(g_lock);
  give_back_locked(index);
  if (w) {  // spill half, so the next drops stay local
    while (w->handle_cache_count > worker::handle_cache_size / 2)
      give_back_locked(w->handle_cache[--w->handle_cache_count]);
  }
}

}  // namespace

value of(ult* u) noexcept {
  if (u->handle) return at(u->handle).live.load(std::memory_order_relaxed) & ~claimed_bit;
  std::uint32_t index = take_index();
  if (index == 0) return 0;
  slot& s = at(index);
  value h = (s.reuses << index_bits) | index;
  s.cancel.store(0, std::memory_order_relaxed);
  s.owner.store(u, std::memory_order_relaxed);
  s.live.store(h, std::memory_order_release);
  u->handle = index;
  return h;
}

ult* find(value h) noexcept {
  slot* s = find_slot(h);
  if (!s) return nullptr;
  if ((s->live.load(std::memory_order_acquire) & ~claimed_bit) != h) return nullptr;
  ult* u = s->owner.load(std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_acquire);
  // Still h: the slot was not reused between the two reads, so u is h's ULT.
  if ((s->live.load(std::memory_order_relaxed) & ~claimed_bit) != h) return nullptr;
  return u;
}

std::atomic<std::uint32_t>* cancel_word(value h) noexcept {
  slot* s = find_slot(h);
  if (!s || (s->live.load(std::memory_order_acquire) & ~claimed_bit) != h) return nullptr;
  return &s->cancel;
}

std::atomic<void*>* signal_cell(value h) noexcept {
  slot* s = find_slot(h);
  if (!s || (s->live.load(std::memory_order_acquire) & ~claimed_bit) != h) return nullptr;
  return &s->signals;
}

ult* claim(value h, int* error) noexcept {
  slot* s = find_slot(h);
  value expected = h;
  if (!s || (h & claimed_bit) ||
      !s->live.compare_exchange_strong(expected, h | claimed_bit, std::memory_order_acq_rel)) {
    *error = s && expected == (h | claimed_bit) ? EINVAL : ESRCH;
    return nullptr;
  }
  // Claimed: only the claimer (through release) may free the slot now.
  ult* u = s->owner.load(std::memory_order_relaxed);
  if (!u) {  // before_start's handle, which names no ULT yet
    s->live.store(h, std::memory_order_release);
    *error = ESRCH;
  }
  return u;
}

void unclaim(value h) noexcept {
  if (slot* s = find_slot(h)) {
    value expected = h | claimed_bit;
    s->live.compare_exchange_strong(expected, h, std::memory_order_acq_rel);
  }
}

void drop(ult* u) noexcept {
  slot& s = at(u->handle);
  s.live.store(0, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);  // pairs with find's fence
  s.owner.store(nullptr, std::memory_order_relaxed);
  ++s.reuses;
  put_index(u->handle);
  u->handle = 0;
}

void drop_all() noexcept {
  std::lock_guard<std::mutex> hold(g_lock);
  g_free = 0;
  for (std::uint32_t index = g_fresh.load(std::memory_order_relaxed); index-- > 1;) {
    slot& s = at(index);
    if (s.live.load(std::memory_order_relaxed) != 0) {
      s.live.store(0, std::memory_order_relaxed);
      s.owner.store(nullptr, std::memory_order_relaxed);
      ++s.reuses;
    }
    give_back_locked(index);
  }
}

namespace {

// before_start's reservation: its handle and OS thread, set under g_lock;
// g_runtime_started once any runtime has started in this process.
std::atomic<value> g_reserved{0};
std::atomic<const void*> g_reserved_thread{nullptr};
bool g_runtime_started = false;  // guarded by g_lock

}  // namespace

value before_start(const void* thread) noexcept {
  if (g_reserved_thread.load(std::memory_order_acquire) == thread)
    return g_reserved.load(std::memory_order_relaxed);
  std::lock_guard<std::mutex> hold(g_lock);
  if (g_runtime_started || g_reserved.load(std::memory_order_relaxed) != 0) return 0;
  const std::uint32_t index = take_locked();
  if (index == 0) return 0;
  slot& s = at(index);
  const value h = (s.reuses << index_bits) | index;
  s.cancel.store(0, std::memory_order_relaxed);
  s.live.store(h, std::memory_order_release);  // owner null: find gives no ULT yet
  g_reserved.store(h, std::memory_order_relaxed);
  g_reserved_thread.store(thread, std::memory_order_release);
  return h;
}

bool is_before_start(value h) noexcept {
  return h != 0 && g_reserved.load(std::memory_order_acquire) == h;
}

void adopt_before_start(ult* main, const void* thread) noexcept {
  std::lock_guard<std::mutex> hold(g_lock);
  g_runtime_started = true;
  const value h = g_reserved.load(std::memory_order_relaxed);
  if (h == 0 || g_reserved_thread.load(std::memory_order_relaxed) != thread) return;
  const auto index = static_cast<std::uint32_t>(h & index_mask);
  slot& s = at(index);
  s.owner.store(main, std::memory_order_relaxed);
  s.live.store(h, std::memory_order_release);  // republished: find reads the owner after it
  main->handle = index;
  g_reserved_thread.store(nullptr, std::memory_order_relaxed);
  g_reserved.store(0, std::memory_order_release);
}

std::uint32_t index_of(value h) noexcept { return static_cast<std::uint32_t>(h & index_mask); }
std::uint64_t reuses_of(value h) noexcept { return (h & ~claimed_bit) >> index_bits; }

std::uint32_t slots_handed_out() noexcept { return g_fresh.load(std::memory_order_acquire); }

value live_at(std::uint32_t index) noexcept {
  slot* s = find_slot(index);
  return s ? s->live.load(std::memory_order_acquire) & ~claimed_bit : 0;
}

void keep_in_forked_child(const ult* self, const void* thread) noexcept {
  // A thread of the parent may have held the lock at the fork.
  new (&g_lock) std::mutex;
  std::uint32_t kept = self ? self->handle : 0;
  value kept_handle = kept ? at(kept).live.load(std::memory_order_relaxed) & ~claimed_bit : 0;
  drop_all();  // the parent's other threads do not exist here
  g_runtime_started = false;
  g_reserved_thread.store(nullptr, std::memory_order_relaxed);
  g_reserved.store(0, std::memory_order_relaxed);
  if (kept_handle == 0) return;
  // Back from the free list drop_all made, as before_start's reservation.
  std::lock_guard<std::mutex> hold(g_lock);
  std::uint32_t* link = &g_free;
  while (*link != 0 && *link != kept) link = &at(*link).next;
  if (*link != kept) return;
  *link = at(kept).next;
  slot& s = at(kept);
  s.reuses = kept_handle >> index_bits;
  s.live.store(kept_handle, std::memory_order_release);
  g_reserved.store(kept_handle, std::memory_order_relaxed);
  g_reserved_thread.store(thread, std::memory_order_release);
}

}  // namespace ito::sched::handles

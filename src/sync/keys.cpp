// SPDX-License-Identifier: Apache-2.0
// ULT-local keys with pthread_key semantics.
//
// The registry is a fixed array, so get/set index it without a lock. Each
// key's sequence number is odd while the key exists and is bumped by create
// and delete; a value remembers the sequence it was set under, so after a
// key_delete (and a later key_create reusing the index) old values read as
// null and are never passed to the new key's destructor.
//
// A ULT's values live in a flat table hung on its descriptor (ult::locals),
// allocated on its first set and grown by doubling; the scheduler calls this
// file's ult_locals extension on the ULT's own stack just before it ends. A plain OS
// thread (and an adopted ULT such as the main ULT, which is its OS thread and
// never ends as a ULT) keeps its table in thread-local storage instead,
// destroyed at thread exit.
#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

#include "ito/error.hpp"
#include "ito/sync.hpp"
#include "sched/scheduler.hpp"

namespace ito {
namespace {

struct key_slot {
  std::atomic<std::uint64_t> sequence{0};
  std::atomic<void (*)(void*)> destructor{nullptr};
};
key_slot g_keys[max_keys];
detail::spinlock g_registry_lock;  // create and delete only

struct local_value {
  void* value;
  std::uint64_t sequence;  // the key's sequence when the value was set
};

struct local_table {
  std::size_t capacity;
  local_value* values() noexcept { return reinterpret_cast<local_value*>(this + 1); }

  // A copy of `old` (may be null) with room for at least `needed` keys.
  static local_table* grown(local_table* old, std::size_t needed) {
    std::size_t capacity = std::max<std::size_t>(needed, old ? old->capacity * 2 : 8);
    capacity = std::min<std::size_t>(capacity, max_keys);
    auto* t = static_cast<local_table*>(
        std::calloc(1, sizeof(local_table) + capacity * sizeof(local_value)));
    if (!t) throw std::bad_alloc();
    t->capacity = capacity;
    if (old) {
      std::memcpy(t->values(), old->values(), old->capacity * sizeof(local_value));
      std::free(old);
    }
    return t;
  }
};

// Runs the destructors of the values in *table, POSIX style, then frees it.
// Destructors may set values again (even growing the table), hence the
// re-reading of *table at every step.
void destroy_values(void*& table) {
  for (unsigned round = 0; round < key_destructor_rounds; ++round) {
    bool called = false;
    for (std::size_t k = 0;; ++k) {
      auto* t = static_cast<local_table*>(table);
      if (!t || k >= t->capacity) break;
      local_value& v = t->values()[k];
      if (!v.value || v.sequence != g_keys[k].sequence.load(std::memory_order_acquire)) continue;
      auto* destructor = g_keys[k].destructor.load(std::memory_order_acquire);
      // The key may have been deleted and re-created since the check above.
      if (!destructor || v.sequence != g_keys[k].sequence.load(std::memory_order_relaxed)) continue;
      destructor(std::exchange(v.value, nullptr));
      called = true;
    }
    if (!called) break;
  }
  std::free(table);
  table = nullptr;
}

struct thread_values {
  void* table = nullptr;
  ~thread_values() { destroy_values(table); }
};

// The table pointer of the caller. Plain TLS is safe here: no switch happens
// while the reference is in use, and adopted ULTs never migrate.
void*& caller_table() {
  sched::ult* u = sched::current_ult();
  if (u && u->stack) [[likely]] return u->locals;
  thread_local thread_values values;
  return values.table;
}

void destroy_ult_values(sched::ult* u) { destroy_values(u->locals); }

struct ult_locals final : sched::extension {
  void ult_ending(sched::ult* u) override { destroy_ult_values(u); }
};

// Set at static initialisation, before any ULT can run: this file is linked
// in exactly when a program can set a value.
const struct install_ult_locals {
  install_ult_locals() noexcept {
    static ult_locals locals;
    sched::install_extension(sched::extension_slot::ult_locals, &locals);
  }
} g_install_ult_locals;

bool is_live(std::uint64_t sequence) noexcept { return (sequence & 1) != 0; }

}  // namespace

key key_create(void (*destructor)(void*)) {
  std::lock_guard lock(g_registry_lock);
  for (key k = 0; k < max_keys; ++k) {  // lowest free index: keeps ULT tables short
    const std::uint64_t s = g_keys[k].sequence.load(std::memory_order_relaxed);
    if (is_live(s)) continue;
    g_keys[k].destructor.store(destructor, std::memory_order_relaxed);
    g_keys[k].sequence.store(s + 1, std::memory_order_release);
    return k;
  }
  throw usage_error(EAGAIN, "ito::key_create: all ito::max_keys keys are in use");
}

void key_delete(key k) {
  std::lock_guard lock(g_registry_lock);
  const std::uint64_t s = k < max_keys ? g_keys[k].sequence.load(std::memory_order_relaxed) : 0;
  if (!is_live(s)) throw usage_error(EINVAL, "ito::key_delete: no such key");
  g_keys[k].sequence.store(s + 1, std::memory_order_release);
  g_keys[k].destructor.store(nullptr, std::memory_order_relaxed);
}

void* get_specific(key k) noexcept {
  if (k >= max_keys) return nullptr;
  auto* t = static_cast<local_table*>(caller_table());
  if (!t || k >= t->capacity) return nullptr;
  const local_value& v = t->values()[k];
  return v.sequence == g_keys[k].sequence.load(std::memory_order_relaxed) ? v.value : nullptr;
}

void set_specific(key k, const void* value) {
  const std::uint64_t s = k < max_keys ? g_keys[k].sequence.load(std::memory_order_acquire) : 0;
  if (!is_live(s)) throw usage_error(EINVAL, "ito::set_specific: no such key");
  void*& table = caller_table();
  auto* t = static_cast<local_table*>(table);
  if (!t || k >= t->capacity) {
    if (!value) return;  // null is every key's initial value: nothing to store
    table = t = local_table::grown(t, std::size_t{k} + 1);
  }
  t->values()[k] = {const_cast<void*>(value), s};
}

}  // namespace ito

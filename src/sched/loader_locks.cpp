// SPDX-License-Identifier: Apache-2.0
#include "sched/loader_locks.hpp"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace ito::sched {
namespace {

constexpr int most_locks = 3;  // dlopen's, the write lock, the TLS lock

// Where each lock found keeps its owner's thread id; written once, before
// g_found is published.
const int* g_owner[most_locks] = {};
std::atomic<int> g_found{0};
std::atomic<bool> g_looked{false};

int kind_of(const pthread_mutex_t* m) noexcept {
  return __atomic_load_n(&m->__data.__kind, __ATOMIC_RELAXED) & 3;  // glibc's kind mask
}
int owner_of(const pthread_mutex_t* m) noexcept {
  return __atomic_load_n(&m->__data.__owner, __ATOMIC_RELAXED);
}

struct region {
  std::uintptr_t lo, hi;
};

// Inside a dl_iterate_phdr callback: the recursive mutex of the region this
// thread owns once is the loader's write lock.
int look_while_held(dl_phdr_info*, std::size_t, void* p) noexcept {
  const auto* r = static_cast<const region*>(p);
  const int self = static_cast<int>(gettid());
  constexpr std::size_t size = sizeof(pthread_mutex_t);
  for (std::uintptr_t a = r->lo; a + size <= r->hi; a += alignof(pthread_mutex_t)) {
    const auto* m = reinterpret_cast<const pthread_mutex_t*>(a);
    if (owner_of(m) != self || m->__data.__count != 1 ||
        kind_of(m) != PTHREAD_MUTEX_RECURSIVE_NP)
      continue;
    int n = 0;
    // Its neighbours of the same kind (ld.so declares the three together).
    if (a - size >= r->lo && kind_of(m - 1) == PTHREAD_MUTEX_RECURSIVE_NP)
      g_owner[n++] = &(m - 1)->__data.__owner;
    g_owner[n++] = &m->__data.__owner;
    if (a + 2 * size <= r->hi && kind_of(m + 1) == PTHREAD_MUTEX_RECURSIVE_NP)
      g_owner[n++] = &(m + 1)->__data.__owner;
    g_found.store(n, std::memory_order_release);
    return 1;
  }
  return 1;  // one call is enough: the lock is held for the whole walk
}

void look() noexcept {
  void* rtld_global = dlsym(RTLD_DEFAULT, "_rtld_global");
  if (!rtld_global) return;
  Dl_info info;
  ElfW(Sym)* symbol = nullptr;
  if (!dladdr1(rtld_global, &info, reinterpret_cast<void**>(&symbol), RTLD_DL_SYMENT) ||
      !symbol || symbol->st_size < sizeof(pthread_mutex_t))
    return;
  const auto lo = reinterpret_cast<std::uintptr_t>(rtld_global);
  region r{lo, lo + symbol->st_size};
  dl_iterate_phdr(&look_while_held, &r);
}

}  // namespace

void find_loader_locks() noexcept {
  if (!g_looked.exchange(true, std::memory_order_acq_rel)) look();
}

bool loader_lock_held_by(pid_t tid) noexcept {
  if (tid == 0) return false;  // an unheld lock's owner
  const int n = g_found.load(std::memory_order_acquire);
  for (int i = 0; i < n; ++i)
    if (__atomic_load_n(g_owner[i], __ATOMIC_RELAXED) == tid) return true;
  return false;
}

bool loader_locks_found() noexcept { return g_found.load(std::memory_order_acquire) > 0; }

}  // namespace ito::sched

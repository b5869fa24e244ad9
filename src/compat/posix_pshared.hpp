// SPDX-License-Identifier: Apache-2.0
// PTHREAD_PROCESS_SHARED mutexes and condition variables: objects in shared
// memory whose waiters may be other processes (a parent and its forked
// children, or unrelated processes mapping one file). ito's own cores keep
// pointers to ULTs and wait queues, which mean nothing in another process, so
// a process-shared object is another representation in the same glibc
// storage: a futex word that the kernel's shared futexes wait on, and owner
// keys that name a process and a thread. Every waiter blocks in the kernel,
// on a delegation pool thread when it is a ULT (its worker runs other ULTs
// meanwhile): as glibc, nothing is shared but the object's bytes.
//
// The private fast paths pay nothing for it: a process-shared mutex keeps
// ito::mutex's state word busy and its owner a value no caller has, so
// lock_if_free, try_lock and unlock fail on it and the POSIX layer looks at
// the kind byte only then. A condition keeps a flag in its clock word, read
// by signal and broadcast (the same cache line as the condition itself).
#pragma once

#include <pthread.h>

#include <cstddef>
#include <cstdint>

namespace ito::posix::pshared {

// In glibc's __kind byte (offset 16) of a process-shared mutex: glibc's own
// PTHREAD_MUTEX_PSHARED_BIT.
inline constexpr std::uint8_t mutex_flag = 0x80;
// glibc's pthread_mutexattr_setpshared bit in the attribute's int.
inline constexpr unsigned mutexattr_flag = 0x80000000u;
// In a condition's clock word (pcond::clock) when it is process-shared.
inline constexpr int cond_flag = 1 << 30;

// An atomic read: in a private mutex this byte is the low byte of the core's
// aux_ word, which others change atomically meanwhile.
inline bool is_mutex(const pthread_mutex_t* m) noexcept {
  return (__atomic_load_n(reinterpret_cast<const unsigned char*>(m) + 16, __ATOMIC_RELAXED) &
          mutex_flag) != 0;
}

void init_mutex(pthread_mutex_t* m, int kind) noexcept;
// As the private ones: 0, EDEADLK, EAGAIN (recursion count full),
// ETIMEDOUT (deadline in CLOCK_MONOTONIC ns; INT64_MAX for none), EBUSY, EPERM.
int lock(pthread_mutex_t* m, std::int64_t deadline_ns) noexcept;
int trylock(pthread_mutex_t* m) noexcept;
int unlock(pthread_mutex_t* m) noexcept;
bool mutex_busy(const pthread_mutex_t* m) noexcept;
// Whether the caller holds it (for a condition wait's EPERM).
bool held(const pthread_mutex_t* m) noexcept;

// The condition's storage: `clock_word` is pcond::clock (with cond_flag).
void init_cond(pthread_cond_t* c) noexcept;
// Releases `m` (process-shared or not), waits for a signal or the deadline,
// takes `m` again: 0 or ETIMEDOUT. The caller checked that it holds `m`.
int wait(pthread_cond_t* c, pthread_mutex_t* m, std::int64_t deadline_ns) noexcept;
void signal(pthread_cond_t* c, bool all) noexcept;
// 0 once every waiter a signal released has left wait() (the memory may
// then be reused), or EBUSY while some may still be blocked.
int destroy_cond(pthread_cond_t* c) noexcept;
// The bytes of a process-shared condition's words, before pcond::clock.
inline constexpr std::size_t cond_words_bytes = 12;

}  // namespace ito::posix::pshared

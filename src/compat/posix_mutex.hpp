// SPDX-License-Identifier: Apache-2.0
// pthread_mutex_t is ito::mutex (src/sync/mutex.cpp): the storage, shared by
// the mutex and condition-variable files (a condition wait unlocks and
// relocks it).
#pragma once

#include <pthread.h>

#include <cstddef>
#include <new>

#include "ito/sync.hpp"
#include "sync/mutex_access.hpp"

namespace ito::posix {

inline mutex& as_mutex(pthread_mutex_t* m) noexcept {
  return *std::launder(reinterpret_cast<mutex*>(m));
}

// Priority-protect mutexes (posix_prioceiling.cpp): init marks one and keeps
// its ceiling from the attribute; destroy forgets it.
void note_protect(pthread_mutex_t* m, const pthread_mutexattr_t* attr);
void forget_protect(pthread_mutex_t* m) noexcept;

}  // namespace ito::posix

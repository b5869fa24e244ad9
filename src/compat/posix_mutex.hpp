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

}  // namespace ito::posix

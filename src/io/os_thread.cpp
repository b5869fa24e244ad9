// SPDX-License-Identifier: Apache-2.0
#include "io/os_thread.hpp"

#include <pthread.h>
#include <signal.h>

namespace ito::detail {

std::atomic<int (*)()> g_helper_start_hook{nullptr};

int start_helper_thread(void* (*fn)(void*), void* arg) noexcept {
  if (int (*hook)() = g_helper_start_hook.load(std::memory_order_acquire)) [[unlikely]] {
    if (const int err = hook(); err != 0) return err;
  }
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  // A new thread inherits its creator's mask: block everything around the
  // create instead of in the thread, which would leave a window open.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pthread_t th;
  int err = pthread_create(&th, &attr, fn, arg);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  pthread_attr_destroy(&attr);
  return err;
}

}  // namespace ito::detail

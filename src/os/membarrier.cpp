// SPDX-License-Identifier: Apache-2.0
#include "os/membarrier.hpp"

#include <linux/membarrier.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace ito::os {

namespace {

std::atomic<bool> g_registered{false};
std::mutex g_registering;

// Threads of this process: /proc/self/task's link count is 2 + threads.
// 0 where /proc cannot tell.
unsigned long threads_now() noexcept {
  struct stat st;
  return stat("/proc/self/task", &st) == 0 && st.st_nlink > 2 ? st.st_nlink - 2 : 0;
}

}  // namespace

bool asymmetric_fence_ready(bool whatever_it_costs) noexcept {
  if (g_registered.load(std::memory_order_acquire)) return true;
  if (!whatever_it_costs && threads_now() != 1) return false;
  std::lock_guard once(g_registering);
  // Registration lasts for the process (and its fork children, on kernels
  // that carry it: heavy_fence registers again where they do not).
  if (!g_registered.load(std::memory_order_relaxed) &&
      syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0)
    g_registered.store(true, std::memory_order_release);
  return g_registered.load(std::memory_order_relaxed);
}

void heavy_fence() noexcept {
  const int saved = errno;
  bool registered_again = false;
  while (syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) != 0) {
    if (errno == EINTR) continue;
    // Not registered: a kernel that does not carry the registration into a
    // fork's child. Register this process, once, and try again.
    if (errno == EPERM && !registered_again &&
        syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0) {
      registered_again = true;
      continue;
    }
    // Going on without the barrier could hand one item to two threads.
    std::perror("ito: membarrier (a thief's fence) failed");
    std::abort();
  }
  errno = saved;
}

}  // namespace ito::os

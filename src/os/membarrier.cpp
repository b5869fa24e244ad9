// SPDX-License-Identifier: Apache-2.0
#include "os/membarrier.hpp"

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace ito::os {

bool asymmetric_fence_ready() noexcept {
  // Registration is per process and lasts; a fork's child inherits it.
  static const bool ready =
      syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
  return ready;
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

// SPDX-License-Identifier: Apache-2.0
#include "stack/guard.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>

namespace ito::stack {
namespace {

// Linux 6.13+. Older headers lack it; older kernels answer EINVAL.
constexpr int madv_guard_install = 102;

// Each mprotect guard costs two mappings, and the kernel caps a process at
// vm.max_map_count of them. Keep half for the program.
// Read with raw system calls: under the preload library open, read and close
// are the POSIX layer's (a std::ifstream here crashed the preloaded program,
// whose runtime was still starting, once qemu made ito fall back to mprotect).
std::size_t mprotect_guard_budget() {
  std::size_t max_maps = 65530;
  const long fd = syscall(SYS_openat, AT_FDCWD, "/proc/sys/vm/max_map_count", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    char text[32];
    const long n = syscall(SYS_read, fd, text, sizeof text - 1);
    syscall(SYS_close, fd);
    std::size_t v = 0;
    for (long i = 0; i < n && text[i] >= '0' && text[i] <= '9'; ++i) v = v * 10 + std::size_t(text[i] - '0');
    if (v > 0) max_maps = v;
  }
  return max_maps / 4;
}

// Whether reading `at` faults: a pipe write from it fails with EFAULT on a
// guard. Asked once, after the first MADV_GUARD_INSTALL: qemu-user answers 0 to
// every madvise without passing it on (advice is a hint to it), which would
// leave every stack unguarded while ito believed otherwise.
// Raw system calls: under the preload library, write and close are the POSIX
// layer's own.
bool reading_faults(const char* at) {
  int fds[2];
  if (syscall(SYS_pipe2, fds, O_CLOEXEC) != 0) return true;  // cannot tell: believe the kernel
  const bool faults = syscall(SYS_write, fds[1], at, 1) < 0 && errno == EFAULT;
  syscall(SYS_close, fds[0]);
  syscall(SYS_close, fds[1]);
  return faults;
}

std::atomic<guard_method> g_method{guard_method::unknown};
std::size_t g_mprotect_guards = 0;

}  // namespace

bool install_guard(char* at, std::size_t bytes) {
  guard_method m = g_method.load(std::memory_order_relaxed);
  if (m == guard_method::unknown || m == guard_method::madvise) {
    if (madvise(at, bytes, madv_guard_install) == 0 &&
        (m == guard_method::madvise || reading_faults(at))) {
      g_method.store(guard_method::madvise, std::memory_order_relaxed);
      return true;
    }
    m = guard_method::mprotect;
    g_method.store(m, std::memory_order_relaxed);
  }
  if (m == guard_method::mprotect) {
    static const std::size_t budget = mprotect_guard_budget();
    if (g_mprotect_guards < budget && mprotect(at, bytes, PROT_NONE) == 0) {
      ++g_mprotect_guards;
      return true;
    }
    std::fprintf(stderr,
                 "ito: warning: out of guard pages (vm.max_map_count); further ULT stacks "
                 "have no guard page\n");
    g_method.store(guard_method::none, std::memory_order_relaxed);
  }
  return false;
}

guard_method current_guard_method() noexcept { return g_method.load(std::memory_order_relaxed); }

void force_guard_method(guard_method m) noexcept { g_method.store(m, std::memory_order_relaxed); }

}  // namespace ito::stack

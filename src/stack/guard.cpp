// SPDX-License-Identifier: Apache-2.0
#include "stack/guard.hpp"

#include <sys/mman.h>

#include <atomic>
#include <cstdio>

namespace ito::stack {
namespace {

// Linux 6.13+. Older headers lack it; older kernels answer EINVAL.
constexpr int madv_guard_install = 102;

// Each mprotect guard costs two mappings, and the kernel caps a process at
// vm.max_map_count of them. Keep half for the program.
std::size_t mprotect_guard_budget() {
  // C stdio, not <fstream>: iostreams would bring libstdc++'s locale code
  // into libito-preload.so, which links libstdc++ statically.
  unsigned long max_maps = 65530;
  if (std::FILE* f = std::fopen("/proc/sys/vm/max_map_count", "re")) {
    if (std::fscanf(f, "%lu", &max_maps) != 1) max_maps = 65530;
    std::fclose(f);
  }
  return max_maps / 4;
}

std::atomic<guard_method> g_method{guard_method::unknown};
std::size_t g_mprotect_guards = 0;

}  // namespace

bool install_guard(char* at, std::size_t bytes) {
  guard_method m = g_method.load(std::memory_order_relaxed);
  if (m == guard_method::unknown || m == guard_method::madvise) {
    if (madvise(at, bytes, madv_guard_install) == 0) {
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

// SPDX-License-Identifier: Apache-2.0
#include "stack/stack_drop.hpp"

#include <sys/mman.h>

#include <algorithm>

namespace ito::stack {

void drop_pages(stack_block* in, std::size_t n, std::size_t stack_bytes,
                std::size_t guard_bytes) noexcept {
  std::sort(in, in + n, [](const stack_block& a, const stack_block& b) { return a.lo < b.lo; });
  for (std::size_t i = 0; i < n;) {
    // A run of neighbouring slots: one call (each call may cost a TLB
    // shootdown on every CPU that runs this process). The guards between them
    // are zapped too, which keeps them: MADV_GUARD_INSTALL markers survive
    // MADV_DONTNEED, and mprotect'ed pages have nothing to zap.
    char* run_lo = in[i].lo;
    char* run_hi = run_lo + stack_bytes;
    std::size_t j = i + 1;
    for (; j < n && in[j].lo == run_hi + guard_bytes; ++j) run_hi = in[j].lo + stack_bytes;
    // MADV_DONTNEED, not MADV_FREE: freed pages would stay counted as resident
    // until the kernel runs short, which is what a user watching RSS sees.
    madvise(run_lo, static_cast<std::size_t>(run_hi - run_lo), MADV_DONTNEED);
    i = j;
  }
}

}  // namespace ito::stack

#include "stack/stack_drop.hpp"

#include <sys/mman.h>

#include <algorithm>

namespace ito::stack {
namespace {

std::uint32_t* generation_word(const stack_block& s) noexcept {
  return reinterpret_cast<std::uint32_t*>(s.hi - sizeof(std::uint64_t));
}

}  // namespace

void drop_pages(stack_block* in, std::size_t n, std::size_t stack_bytes, std::size_t guard_bytes,
                dropped_stack* out) noexcept {
  std::sort(in, in + n, [](const stack_block& a, const stack_block& b) { return a.lo < b.lo; });
  for (std::size_t i = 0; i < n;) {
    // A run of neighbouring slots: one call (each call may cost a TLB
    // shootdown on every CPU that runs this process). The guards between them
    // are zapped too, which keeps them: MADV_GUARD_INSTALL markers survive
    // MADV_DONTNEED, and mprotect'ed pages have nothing to zap.
    char* run_lo = in[i].lo;
    char* run_hi = run_lo + stack_bytes;
    out[i] = {in[i], *generation_word(in[i])};
    std::size_t j = i + 1;
    for (; j < n && in[j].lo == run_hi + guard_bytes; ++j) {
      out[j] = {in[j], *generation_word(in[j])};
      run_hi = in[j].lo + stack_bytes;
    }
    // MADV_DONTNEED, not MADV_FREE: freed pages would stay counted as resident
    // until the kernel runs short, which is what a user watching RSS sees.
    madvise(run_lo, static_cast<std::size_t>(run_hi - run_lo), MADV_DONTNEED);
    i = j;
  }
}

void revive(const dropped_stack& d) noexcept { *generation_word(d.s) = d.generation; }

}  // namespace ito::stack

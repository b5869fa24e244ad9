// SPDX-License-Identifier: Apache-2.0
// The spin-wait hint, per architecture.
#pragma once

namespace ito::arch {

#if defined(__x86_64__)
inline void cpu_relax() noexcept { __builtin_ia32_pause(); }
#elif defined(__aarch64__)
// `yield` is a no-op on most ARM cores; `isb` stalls for tens of cycles, which
// is what a spin loop wants from x86's `pause` (less power, less pressure on
// the line the partner is about to write).
inline void cpu_relax() noexcept { asm volatile("isb" ::: "memory"); }
#else
#error "ito: no cpu_relax for this architecture"
#endif

// A spin round: `times` hints in a row.
inline void cpu_relax(int times) noexcept {
  for (int i = 0; i < times; ++i) cpu_relax();
}

}  // namespace ito::arch

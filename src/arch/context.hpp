// SPDX-License-Identifier: Apache-2.0
// Machine contexts: make a fresh one on a stack, switch between them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "arch/cpu_relax.hpp"

extern "C" {
// What a context's main function returns when it ends: the context to resume
// and the argument for ito_ult_exit_hook, which runs on that context's stack.
struct ito_exit_switch {
  void* next_sp;
  void* hook_arg;
};
void* ito_context_switch(void** save_sp, void* load_sp, void* value, void* (*on_top)(void*)) noexcept;
void ito_context_start(void** save_sp, void* stack_top, void* data, void* (*on_top)(void*),
                       void* on_top_arg, ito_exit_switch (*main)(void*)) noexcept;
void ito_context_start_split(void** save_sp, void* stack_top, void* data, void* (*on_top)(void*),
                             void* on_top_arg, ito_exit_switch (*main)(void*)) noexcept;
void ito_context_trampoline() noexcept;
// Defined by the scheduler.
void* ito_ult_exit_hook(void* arg) noexcept;
#if defined(__x86_64__)
// Nonzero: the switches neither save nor load the control words
// (options::fp_modes, per_worker; context_x86_64.S).
[[gnu::visibility("hidden")]] extern unsigned char ito_fp_modes_per_worker;
#endif
}

namespace ito::arch {

using on_top_fn = void* (*)(void*);
using main_fn = ito_exit_switch (*)(void* data);

#if defined(__x86_64__)
// Lays out a context below stack_hi that, when first switched to, calls
// main(data) and, when main returns, resumes what it names. Returns its sp.
// (It starts with the default MXCSR and x87 control word; a context started
// with ito_context_start inherits its creator's instead.)
inline void* make_context(void* stack_hi, main_fn entry, void* data) noexcept {
  auto top = reinterpret_cast<std::uintptr_t>(stack_hi) & ~std::uintptr_t{15};
  // Nine words: control words, split-stack limit, r15, r14, r13, r12, rbx, rbp,
  // return address. After the switch pops them, rsp = top - 16 (16-aligned).
  auto* sp = reinterpret_cast<std::uint64_t*>(top - 16 - 72);
  std::uint32_t control[2] = {0x1F80u, 0x037Fu};  // default MXCSR, x87 control word
  std::memcpy(&sp[0], control, sizeof control);
  sp[1] = 0;                                            // split-stack limit: none
  sp[2] = 0;                                            // r15
  sp[3] = 0;                                            // r14
  sp[4] = reinterpret_cast<std::uint64_t>(data);        // r13
  sp[5] = reinterpret_cast<std::uint64_t>(entry);       // r12
  sp[6] = 0;                                            // rbx
  sp[7] = 0;                                            // rbp
  sp[8] = reinterpret_cast<std::uint64_t>(&ito_context_trampoline);
  return sp;
}

#elif defined(__aarch64__)
inline constexpr std::size_t context_frame_bytes = 176;

// Lays out a context below stack_hi that, when first switched to, calls
// main(data) and, when main returns, resumes what it names. Returns its sp.
// (It starts with the default FPCR, 0; a context started with
// ito_context_start inherits its creator's instead.)
inline void* make_context(void* stack_hi, main_fn entry, void* data) noexcept {
  auto top = reinterpret_cast<std::uintptr_t>(stack_hi) & ~std::uintptr_t{15};
  // The 176-byte frame save_context leaves (arch/context_aarch64.S): FPCR and
  // a pad word, d8-d15, x19-x28, fp, lr. After the switch loads it, sp = top.
  auto* sp = reinterpret_cast<std::uint64_t*>(top - context_frame_bytes);
  std::memset(sp, 0, context_frame_bytes);                // FPCR 0, fp 0: the outermost frame
  sp[10] = reinterpret_cast<std::uint64_t>(entry);        // x19
  sp[11] = reinterpret_cast<std::uint64_t>(data);         // x20
  sp[21] = reinterpret_cast<std::uint64_t>(&ito_context_trampoline);  // lr
  return sp;
}

#else
#error "ito: no context switch for this architecture (src/arch/context_<arch>.S)"
#endif

inline void* switch_context(void** save_sp, void* load_sp, void* value, on_top_fn on_top) noexcept {
  return ito_context_switch(save_sp, load_sp, value, on_top);
}

// The floating-point modes a context keeps as its own (rounding, exception
// masks, flush-to-zero): what the switch saves and loads, for code that runs
// a ULT without a switch (a child joined inline, sched/scheduler.cpp).
#if defined(__x86_64__)
struct fp_modes {
  std::uint32_t mxcsr;
  std::uint16_t x87;
};
inline constexpr fp_modes default_fp_modes{0x1F80u, 0x037Fu};  // as make_context
inline fp_modes save_fp_modes() noexcept {
  fp_modes m;
  asm volatile("stmxcsr %0\n\tfnstcw %1" : "=m"(m.mxcsr), "=m"(m.x87));
  return m;
}
// Loads `want` where it differs from `now` (the modes in force), keeping
// MXCSR's sticky exception flags (its low six bits) as they are: as the
// switch does (context_x86_64.S, load_fp_modes, which says why).
inline void change_fp_modes(const fp_modes& now, const fp_modes& want) noexcept {
  constexpr std::uint32_t flags = 0x3f;
  if ((now.mxcsr ^ want.mxcsr) & ~flags) {
    const std::uint32_t next = (want.mxcsr & ~flags) | (now.mxcsr & flags);
    asm volatile("ldmxcsr %0" : : "m"(next) : "memory");
  }
  if (now.x87 != want.x87) asm volatile("fldcw %0" : : "m"(want.x87) : "memory");
}
// Whether switches carry each context's modes (options::fp_modes). Set by a
// runtime's start, before its workers run; a frame saved under either
// setting may be resumed under the other (the per-worker frame is marked).
inline bool fp_modes_carried() noexcept { return ito_fp_modes_per_worker == 0; }
inline void carry_fp_modes(bool carry) noexcept { ito_fp_modes_per_worker = carry ? 0 : 1; }
#elif defined(__aarch64__)
struct fp_modes {
  std::uint64_t fpcr;
};
inline constexpr fp_modes default_fp_modes{0};  // as make_context
inline fp_modes save_fp_modes() noexcept {
  fp_modes m;
  asm volatile("mrs %0, fpcr" : "=r"(m.fpcr));
  return m;
}
inline void change_fp_modes(const fp_modes& now, const fp_modes& want) noexcept {
  if (now.fpcr != want.fpcr) asm volatile("msr fpcr, %0" : : "r"(want.fpcr) : "memory");
}
// FPCR is always carried here (an `mrs` is cheap); options::fp_modes is x86-64's.
inline bool fp_modes_carried() noexcept { return true; }
inline void carry_fp_modes(bool) noexcept {}
#endif

#if defined(__x86_64__)
// The split-stack limit word of the running context (glibc reserves %fs:0x70
// for it). Zero means "no limit": split-stack prologues never call __morestack.
inline void* split_limit() noexcept {
  void* v;
  asm volatile("movq %%fs:0x70, %0" : "=r"(v));
  return v;
}
inline void set_split_limit(void* v) noexcept { asm volatile("movq %0, %%fs:0x70" : : "r"(v) : "memory"); }
// The limit word a suspended context loads when it resumes: the second word
// above its saved sp (context_x86_64.S, save_context).
inline void set_saved_split_limit(void* saved_sp, void* v) noexcept {
  static_cast<void**>(saved_sp)[1] = v;
}

#else
// Split stacks exist on x86-64 only (GCC has no -fsplit-stack for aarch64):
// no context has a limit word.
inline void* split_limit() noexcept { return nullptr; }
inline void set_split_limit(void*) noexcept {}
inline void set_saved_split_limit(void*, void*) noexcept {}

#endif

}  // namespace ito::arch

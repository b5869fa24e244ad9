// SPDX-License-Identifier: Apache-2.0
// glibc's per-thread state besides errno that a ULT carries across the POSIX
// layer's calls that may switch (docs/POSIX.md, "TLS and errno").
//
// glibc keeps a thread's locale (uselocale: the locale pointer, the
// per-category pointers and the ctype table caches) and h_errno in the OS
// thread's TLS, i.e. the worker's: a ULT that blocks may come back on another
// worker, or after another ULT on this one installed its own locale. Every
// POSIX call that can switch records both on entry and reinstalls them on the
// worker it returns on. Saving costs a call of uselocale(0) (one TLS load in
// glibc) and of __h_errno_location; restoring calls uselocale only when the
// worker's locale differs. None of it is on the context switch itself.
#pragma once

namespace ito::posix {

struct carried_state {
  void* locale;  // locale_t, as uselocale(0) gives it (LC_GLOBAL_LOCALE included)
  int h_err;
};

// Out of line on purpose: __h_errno_location is declared const, so inlined
// code could keep the address of the worker the ULT left (as errno_now).
[[gnu::noinline]] carried_state save_carried() noexcept;
[[gnu::noinline]] void restore_carried(const carried_state& s) noexcept;

// A new thread starts in the global locale with h_errno 0, as an NPTL thread
// does, though its ULT starts on a worker in whatever state the ULT there
// before it left (its creator's, child first).
[[gnu::noinline]] void start_as_a_new_thread() noexcept;

struct carried_guard {
  carried_state s;
  carried_guard() noexcept : s(save_carried()) {}
  carried_guard(const carried_guard&) = delete;
  carried_guard& operator=(const carried_guard&) = delete;
  ~carried_guard() { restore_carried(s); }
};

}  // namespace ito::posix

// SPDX-License-Identifier: Apache-2.0
// glibc's own layout of pthread_attr_t (nptl/internaltypes.h, stable ABI on
// x86-64 and aarch64: the same struct, in 56 of the public type's 56 or 64
// bytes). ito keeps the same fields where glibc does, so the attribute
// calls ito does not rename (setscope, setguardsize, getstack, ...) still
// work on it; pthread_create reads it and pthread_getattr_np fills it.
#pragma once

#include <pthread.h>

#include <cstddef>

namespace ito::posix {

struct glibc_attr {
  sched_param schedparam;
  int schedpolicy;
  int flags;
  std::size_t guardsize;
  void* stackaddr;  // the stack's top (highest address), as glibc keeps it
  std::size_t stacksize;
  void* extension;
  void* unused;
};
static_assert(sizeof(glibc_attr) <= sizeof(pthread_attr_t));
inline constexpr int attr_flag_detached = 0x0001;
inline constexpr int attr_flag_stackaddr = 0x0008;

inline glibc_attr* as_attr(pthread_attr_t* a) { return reinterpret_cast<glibc_attr*>(a); }
inline const glibc_attr* as_attr(const pthread_attr_t* a) {
  return reinterpret_cast<const glibc_attr*>(a);
}

}  // namespace ito::posix

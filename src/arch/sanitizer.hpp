// SPDX-License-Identifier: Apache-2.0
// Tells ASan and TSan about stack switches, so they follow ULTs across stacks.
// Compiles to nothing in builds without sanitizers.
#pragma once

#include <cstddef>

#include <pthread.h>

#if defined(__SANITIZE_ADDRESS__)
#define ITO_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ITO_ASAN 1
#endif
#endif

#if defined(__SANITIZE_THREAD__)
#define ITO_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define ITO_TSAN 1
#endif
#endif

#if ITO_ASAN
extern "C" {
void __sanitizer_start_switch_fiber(void** fake_stack_save, const void* bottom, std::size_t size);
void __sanitizer_finish_switch_fiber(void* fake_stack_save, const void** bottom_old,
                                     std::size_t* size_old);
}
#endif
#if ITO_TSAN
extern "C" {
void* __tsan_get_current_fiber(void);
void* __tsan_create_fiber(unsigned flags);
void __tsan_destroy_fiber(void* fiber);
void __tsan_switch_to_fiber(void* fiber, unsigned flags);
void __tsan_func_exit(void);  // what the compiler calls as an instrumented function returns
}
#endif

namespace ito::arch {

// What the sanitizers need to know about one execution context.
struct sanitizer_fiber {
#if ITO_ASAN
  const void* stack_bottom = nullptr;
  std::size_t stack_size = 0;
  void* fake_stack = nullptr;
#endif
#if ITO_TSAN
  void* tsan = nullptr;
  bool owns_tsan = false;
#endif
};

inline void sanitizer_init_fiber(sanitizer_fiber& f, const void* bottom, std::size_t size) {
  (void)f, (void)bottom, (void)size;
#if ITO_ASAN
  f.stack_bottom = bottom;
  f.stack_size = size;
#endif
#if ITO_TSAN
  f.tsan = __tsan_create_fiber(0);
  f.owns_tsan = true;
#endif
}

// For a context that already runs on an OS thread's own stack.
inline void sanitizer_adopt_current(sanitizer_fiber& f) {
  (void)f;
#if ITO_ASAN
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) == 0) {
    void* addr = nullptr;
    std::size_t size = 0;
    pthread_attr_getstack(&attr, &addr, &size);
    pthread_attr_destroy(&attr);
    f.stack_bottom = addr;
    f.stack_size = size;
  }
#endif
#if ITO_TSAN
  f.tsan = __tsan_get_current_fiber();
  f.owns_tsan = false;
#endif
}

// Must not be called for the fiber that is running.
inline void sanitizer_destroy_fiber(sanitizer_fiber& f) {
  (void)f;
#if ITO_TSAN
  if (f.owns_tsan && f.tsan) __tsan_destroy_fiber(f.tsan);
  f.tsan = nullptr;
#endif
}

// Call right before switching from `from` to `to`. `from_dies` when the
// current stack will never be resumed.
inline void sanitizer_before_switch(sanitizer_fiber& from, sanitizer_fiber& to, bool from_dies) {
  (void)from, (void)to, (void)from_dies;
#if ITO_ASAN
  __sanitizer_start_switch_fiber(from_dies ? nullptr : &from.fake_stack, to.stack_bottom,
                                 to.stack_size);
#endif
#if ITO_TSAN
  __tsan_switch_to_fiber(to.tsan, 0);
#endif
}

// For a function that leaves by switching and never returns, on a fiber that
// a later context reuses (a ULT descriptor's): pops its own entry from TSan's
// shadow stack for that fiber, which would otherwise keep one frame per
// context run on it until TSan's 65,536-frame limit stops the program. Call
// it before sanitizer_before_switch, while the fiber is still the current one.
inline void sanitizer_leave_for_good() {
#if ITO_TSAN
  __tsan_func_exit();
#endif
}

// Call first thing on the resumed side (and at the start of a new context).
inline void sanitizer_after_switch(sanitizer_fiber& self) {
  (void)self;
#if ITO_ASAN
  __sanitizer_finish_switch_fiber(self.fake_stack, nullptr, nullptr);
#endif
}

}  // namespace ito::arch

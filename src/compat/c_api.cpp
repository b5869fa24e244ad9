// SPDX-License-Identifier: Apache-2.0
// The C API (include/ito/ito.h) on the internal scheduler. Every entry point
// catches everything and returns a POSIX code; only ito_exit unwinds, on purpose.
//
// A handle is a slot of sched's handle table (sched/handles.hpp) and its reuse
// count: a stale one is recognised in the table, without reading the memory
// of the ULT it named. Joining or detaching first claims the handle in the
// table, so of two racing calls only one ever touches the ULT.
#include "ito/ito.h"

#include <resolv.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <system_error>

#include "compat/c_create.hpp"
#include "compat/posix_thread_signals.hpp"
#include "compat/carried_state.hpp"
#include "compat/c_errors.hpp"
#include "compat/posix_internal.hpp"
#include "ito/error.hpp"
#include "ito/options.hpp"
#include "ito/parallel.hpp"
#include "sched/handles.hpp"
#include "sched/interrupt.hpp"
#include "sched/runtime_control.hpp"
#include "sched/scheduler.hpp"

namespace {

using ito::sched::ult;

// The runtime ito_init started (null when the C API started none).
std::atomic<ito::sched::runtime_state*> g_c_runtime{nullptr};

// What ito_create reserves at the top of the new ULT's stack.
struct c_frame {
  void* (*fn)(void*);
  void* arg;
  void* result;
};

void c_body(void* p) {
  auto* f = static_cast<c_frame*>(p);
  // It starts on a worker in the per-thread state another ULT left there.
  ito::posix::start_as_a_new_thread();
  try {
    f->result = f->fn(f->arg);
    // A signal aimed at it (or handed to it for the process) that it left
    // open and has not run yet: it runs now, while the thread still is.
    ito::posix::thread_ends(ito::sched::current_ult());
  } catch (const ito::sched::exit_unwind&) {
    throw;  // ito_exit: caught at the ULT's entry
  } catch (...) {
    ito::sched::fatal("a C++ exception escaped a ULT started with ito_create");
  }
}

// c_body for a ULT with a TLS block of its own (ITO_ULT_TLS): what NPTL's
// start_thread sets up in a new thread's TLS first, its C++ thread_local
// destructors when it returns or unwinds (pthread_exit), before its keys'
// destructors (which run after the body: run_body in scheduler.cpp), as
// NPTL orders them.
void c_body_own_tls(void* p) {
  struct __res_state res;  // its resolver state: NPTL keeps one in each thread's struct pthread
  std::memset(&res, 0, sizeof res);
  ito::sched::ult_tls::thread_start(&res);
  struct run_tls_destructors {
    ~run_tls_destructors() { ito::sched::ult_tls::thread_end(); }
  } at_end;
  c_body(p);
}

// Whether u's frame is a c_frame (ito_create made it): with or without a TLS
// block, its start routine's return value is there.
bool has_c_frame(const ult* u) noexcept { return u->body == &c_body || u->body == &c_body_own_tls; }

namespace handles = ito::sched::handles;

// Finds the live ULT a handle names; ESRCH when there is none (any more).
int decode(ito_ult_t h, ult** out) noexcept {
  ult* u = handles::find(h);
  if (!u) return ESRCH;
  *out = u;
  return 0;
}

// Why a claimed ULT cannot be joined or detached through its handle (0 if it can).
int not_claimable(const ult* u, const ult* self) noexcept {
  if (u == self) return EDEADLK;
  // The main ULT never ends as a ULT does; a future owns create_thread's ULTs.
  if (u->bound || u->has_future) return EINVAL;
  return 0;
}

ito::stack_policy c_stack_policy(int v) {
  switch (v) {
    case ITO_STACKS_FIXED: return ito::stack_policy::fixed;
    case ITO_STACKS_LAZY: return ito::stack_policy::lazy;
    case ITO_STACKS_FAIR_USE: return ito::stack_policy::fair_use;
  }
  throw ito::config_error("ito: options.stacks=" + std::to_string(v) +
                              " is not ITO_STACKS_FIXED, ITO_STACKS_LAZY or ITO_STACKS_FAIR_USE",
                          false);
}

ito::stack_alloc c_stack_alloc(int v) {
  if (v == ITO_STACK_ALLOC_MMAP) return ito::stack_alloc::mmap;
  if (v == ITO_STACK_ALLOC_MALLOC) return ito::stack_alloc::malloc;
  throw ito::config_error("ito: options.stack_alloc=" + std::to_string(v) +
                              " is not ITO_STACK_ALLOC_DEFAULT, _MMAP or _MALLOC",
                          false);
}

}  // namespace

int ito::compat::find_ult(ito_ult_t handle, ult** out) noexcept {
  // The main thread's pthread_self from before the runtime names the main
  // ULT once there is one: start it (sched/handles.hpp, before_start).
  if (!ito::sched::current_ult() && handles::is_before_start(handle))
    (void)ito::posix::ensure_runtime();
  return decode(handle, out);
}

int ito::compat::create_ult(ito_ult_t* out, void* (*fn)(void*), void* arg, bool detached,
                            const stack_request& stack, ito::posix::sched_choice sched) {
  using ito::sched::stack_origin;
  if (!ito::sched::current_ult()) return EPERM;
  if (!fn) return EINVAL;
  void* frame_bytes = nullptr;
  ult* u;
  ito::sched::runtime_state* rt = ito::sched::current_worker()->rt;
  ito::sched::start_other_workers(rt);  // deferred by the POSIX layer's start
  const ito::options& opts = rt->opts;
  if (opts.stacks != ito::stack_policy::fixed) {
    // Split-stack ULTs grow by segments: any size fits, and a caller's stack
    // cannot be one (it has no segment header or limit word).
    if (stack.caller_base) return EINVAL;
    u = ito::sched::allocate(sizeof(c_frame), &frame_bytes);
  } else if (stack.caller_base) {
    ito::stack::stack_block s = ito::sched::caller_stack(stack.caller_base, stack.bytes);
    if (!s) return EINVAL;
    u = ito::sched::allocate_on(s, stack_origin::caller, sizeof(c_frame), &frame_bytes);
  } else if (stack.bytes != 0) {
    // The size asked for, all of it below what ito keeps at the top: POSIX
    // makes it a minimum, and a program that asks for a small stack expects
    // the guard page there (LTP's pthread_create/1-5), so no pool stack,
    // larger or smaller, stands in for it.
    ito::stack::stack_block s =
        ito::sched::take_dedicated_stack(stack.bytes + ito::sched::stack_top_reserve(sizeof(c_frame)));
    if (!s) return EAGAIN;
    u = ito::sched::allocate_on(s, stack_origin::dedicated, sizeof(c_frame), &frame_bytes);
  } else {
    u = ito::sched::allocate(sizeof(c_frame), &frame_bytes);
  }
  ito_ult_t handle = handles::of(u);
  if (handle == 0) {  // 16M handles live
    ito::sched::release(u);
    return EAGAIN;
  }
  ito::posix::inherit_signal_mask(handle);  // POSIX: its creator's mask
  ::new (frame_bytes) c_frame{fn, arg, nullptr};
  // Under the preload, a module with TLS loaded since the last creation (by
  // dlopen, or by glibc for NSS or iconv) turns blocks on from this thread.
  if (void (*check)() = ito::posix::g_tls_load_check.load(std::memory_order_acquire)) check();
  const bool own_tls = rt->tls_blocks.load(std::memory_order_acquire);  // ult_tls::turn_on
  if (own_tls) {
    try {
      ito::sched::ult_tls::give(u, ito::posix::thread_id_of(handle));
    } catch (...) {
      ito::sched::release(u);
      throw;
    }
  }
  if (sched.policy != SCHED_OTHER || sched.priority != 0) ito::posix::set_sched(u, sched);
  if (out) *out = handle;          // an identifier only, if detached
  if (detached) ito::sched::detach(u);  // not started yet: only marks it
  ito::sched::fork(u, own_tls ? &c_body_own_tls : &c_body);
  return 0;
}

namespace {
int create(ito_ult_t* out, void* (*fn)(void*), void* arg, bool detached) {
  return ito::compat::create_ult(out, fn, arg, detached, {});
}
}  // namespace

extern "C" {

int ito_init(const ito_options_t* opts) {
  try {
    ito::options requested;
    if (opts) {
      requested.workers = opts->workers;
      requested.stack_size = opts->stack_size;
      if (opts->bind != 0) requested.bind = opts->bind > 0;
      if (opts->stats != 0) requested.stats = opts->stats > 0;
      requested.stacks = c_stack_policy(opts->stacks);
      requested.stack_block_size = opts->stack_block_size;
      if (opts->stack_alloc != ITO_STACK_ALLOC_DEFAULT)
        requested.stack_allocator = c_stack_alloc(opts->stack_alloc);
    }
    // config_error (options or environment) prints its message: EINVAL, no exit.
    ito::options resolved = ito::resolve_options(requested);
    ito::sched::runtime_state* rt = ito::sched::start_runtime(resolved);
    g_c_runtime.store(rt, std::memory_order_release);
    return 0;
  } catch (...) {
    return ito::compat::code_of_current_exception();
  }
}

int ito_finalize(void) {
  try {
    ito::sched::runtime_state* rt = g_c_runtime.load(std::memory_order_acquire);
    if (!rt || ito::sched::g_runtime.load(std::memory_order_acquire) != rt) return EPERM;
    ito::sched::worker* w = ito::sched::current_worker();
    if (!w || w->rt != rt || w->current != &rt->main_ult) return EPERM;
    g_c_runtime.store(nullptr, std::memory_order_release);
    ito::sched::stop_runtime(rt);
    return 0;
  } catch (...) {
    return ito::compat::code_of_current_exception();
  }
}

int ito_create(ito_ult_t* out, void* (*fn)(void*), void* arg) {
  try {
    if (!out) return EINVAL;
    return create(out, fn, arg, false);
  } catch (...) {
    return ito::compat::code_of_current_exception();
  }
}

int ito_create_detached(void* (*fn)(void*), void* arg) {
  try {
    return create(nullptr, fn, arg, true);
  } catch (...) {
    return ito::compat::code_of_current_exception();
  }
}

int ito_join(ito_ult_t handle, void** retval) {
  try {
    ult* self = ito::sched::current_ult();
    if (!self) return EPERM;
    if (handles::find(handle) == self) return EDEADLK;  // compared, not read
    int e = 0;
    ult* u = handles::claim(handle, &e);
    if (!u) return e;
    // Armed by pthread_join only (posix_cancel.cpp): EINTR then.
    const bool interruptible = ito::sched::take_interruptible_arm(self);
    if ((e = not_claimable(u, self)) || (e = ito::sched::join_claim(u, interruptible))) {
      handles::unclaim(handle);
      return e;
    }
    void* value = nullptr;
    if (u->exited) value = u->exit_value;
    else if (has_c_frame(u)) value = static_cast<c_frame*>(u->frame)->result;
    ito::sched::release(u);
    if (retval) *retval = value;
    return 0;
  } catch (...) {
    return ito::compat::code_of_current_exception();
  }
}

int ito_detach(ito_ult_t handle) {
  try {
    if (!ito::sched::g_runtime.load(std::memory_order_acquire)) return EPERM;
    int e = 0;
    ult* u = handles::claim(handle, &e);
    if (!u) return e;  // ESRCH: gone; EINVAL: detached or being joined
    if ((e = not_claimable(u, nullptr)) || (e = ito::sched::detach(u))) handles::unclaim(handle);
    return e;
  } catch (...) {
    return ito::compat::code_of_current_exception();
  }
}

namespace {

// Halves the range at each level: records for two halves at a time, however long the list.
void invoke_range(void (*const fns[])(void*), void* const args[], std::size_t lo, std::size_t hi) {
  if (hi - lo == 1) return fns[lo](args ? args[lo] : nullptr);
  const std::size_t mid = lo + (hi - lo) / 2;
  ito::parallel_invoke([&] { invoke_range(fns, args, lo, mid); },
                       [&] { invoke_range(fns, args, mid, hi); });
}

}  // namespace

int ito_parallel_invoke(size_t n, void (*const fns[])(void*), void* const args[]) {
  if (!ito::sched::current_ult()) return EPERM;
  if (n == 0 || !fns) return EINVAL;
  for (std::size_t i = 0; i < n; ++i)
    if (!fns[i]) return EINVAL;
  // ito_exit() in a call unwinds to the ULT's entry through here.
  invoke_range(fns, args, 0, n);
  return 0;
}

int ito_yield(void) {
  if (!ito::sched::current_ult()) return EPERM;
  ito::sched::yield(false);
  return 0;
}

int ito_yield_to_head(void) {
  if (!ito::sched::current_ult()) return EPERM;
  ito::sched::yield(true);
  return 0;
}

int ito_sleep_ns(long long ns) {
  try {
    if (!ito::sched::current_ult()) return EPERM;
    if (ns < 0) return EINVAL;
    long long deadline;  // saturated: a sleep of LLONG_MAX must not wrap into the past
    ito::sched::sleep_until_ns(__builtin_add_overflow(ito::sched::monotonic_ns(), ns, &deadline)
                                   ? ito::sched::timer_queue::never : deadline);
    return 0;
  } catch (...) {
    return ito::compat::code_of_current_exception();
  }
}

ito_ult_t ito_self(void) {
  ult* u = ito::sched::current_ult();
  if (!u) return ITO_ULT_NULL;
  // A ULT made by create_thread has a private id until its future is handed
  // out; this handle may reach a joiner or detacher first, so its end must be
  // published with the full atomic exchange.
  u->id_was_public = true;
  return handles::of(u);
}

void ito_exit(void* retval) {
  ult* u = ito::sched::current_ult();
  if (!u) ito::sched::fatal("ito_exit: called outside a ULT");
  if (u->bound) ito::sched::fatal("ito_exit: the main ULT cannot exit; call ito_finalize instead");
  ito::sched::exit_current(retval);
}

unsigned ito_version(void) { return ITO_VERSION; }

const char* ito_version_string(void) { return ITO_VERSION_STRING; }

unsigned ito_workers(void) {
  ito::sched::runtime_state* rt = ito::sched::g_runtime.load(std::memory_order_acquire);
  return rt ? static_cast<unsigned>(rt->workers.size()) : 0;
}

}  // extern "C"

// SPDX-License-Identifier: Apache-2.0
// The C++ API's non-template parts: the low-level calls (allocate, fork,
// join, detach), checked.
#include <cxxabi.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "ito/error.hpp"
#include "ito/thread.hpp"
#include "ito/ult.hpp"
#include "sched/extension.hpp"
#include "sched/scheduler.hpp"
#include "sched/task_records.hpp"
#include "stack/provider.hpp"

namespace ito {
namespace {

sched::ult* as_ult(ult_id id) { return static_cast<sched::ult*>(id.p); }

void require_ult(const char* function) {
  if (!sched::current_ult()) detail::throw_outside_ult(function);
}

// What a join/detach error code means, for a usage_error.
[[gnu::noinline, gnu::cold]] void throw_join_error(int code, const char* function) {
  const char* why = code == ESRCH     ? "the ULT was already joined (or reaped after detach)"
                    : code == EDEADLK ? "a ULT cannot join itself"
                                      : "the ULT is detached or another ULT is joining it";
  throw usage_error(code, std::string(function) + ": " + why);
}

[[gnu::noinline, gnu::cold]] void throw_null_id(const char* function) {
  throw usage_error(EINVAL, std::string(function) + ": null ULT id");
}

// A future's ULT, whose owner (the future) is its only possible joiner. A
// second owner can only come from a moved-from or shared future: a usage
// error caught here instead of a corrupted join. (Its throws are out of
// line: in the split build, a function that calls libstdc++ itself pays
// __morestack_non_split on every call, ~8 ns.)
inline void require_joinable(ult_id id, const char* function) {
  if (!id.p) [[unlikely]] throw_null_id(function);
  auto s = sched::join_word::read(as_ult(id));
  if (s == sched::join_released || sched::is_joiner(s) || s == sched::join_detached) [[unlikely]]
    throw_join_error(s == sched::join_released ? ESRCH : EINVAL, function);
  if (as_ult(id) == sched::current_ult()) [[unlikely]] throw_join_error(EDEADLK, function);
}

// For the id-based calls: a ULT that a future owns cannot be joined or
// detached behind the future's back.
void require_no_future(ult_id id, const char* function) {
  if (!id.p) throw_null_id(function);
  if (sched::is_foreign(as_ult(id))) return;  // its home checks (distributed mode)
  if (as_ult(id)->has_future)
    throw usage_error(EINVAL, std::string(function) +
                                  ": the ULT was made by create_thread; join its future instead");
}

constexpr unsigned long shown_orphaned_exceptions = 16;
std::atomic<unsigned long> g_orphaned_exceptions{0};

}  // namespace

namespace detail {

void throw_outside_ult(const char* function) {
  throw usage_error(EPERM, std::string(function) +
                               ": must be called from a ULT (start the runtime first, e.g. "
                               "ito::start_main_thread or ito::runtime)");
}

bool ult_finished(ult_id id) noexcept {
  // Another process's ULT: only a message could tell; not ready as far as we know.
  if (sched::is_foreign(as_ult(id))) [[unlikely]] return false;
  return sched::has_ended(sched::join_word::read(as_ult(id)));
}

void ult_wait(ult_id id) {
  require_ult("ito::join");
  sched::ult* u = as_ult(id);
  if (u && sched::is_foreign(u)) [[unlikely]] return sched::wait_finished(u);
  // The common case: a ULT of this process that has ended.
  if (u && sched::has_ended(sched::join_word::read(u))) [[likely]] return;
  require_joinable(id, "ito::join");
  sched::wait_finished(u);
}

void ult_release(ult_id id) { sched::release(as_ult(id)); }

bool ult_exited(ult_id id) noexcept { return as_ult(id)->exited; }

void set_own_cleanup(frame_cleanup_fn cleanup) noexcept {
  sched::current_ult()->frame_cleanup = cleanup;
}

namespace {

// What a future's frame tells the descriptor it was given.
inline allocated_ult frame_owned(sched::ult* u, void* frame, frame_cleanup_fn cleanup,
                                 void (*on_exception)(void*, bool), std::uint32_t error_offset,
                                 bool result_local) noexcept {
  u->frame_cleanup = cleanup;
  u->frame_catch = on_exception;
  u->frame_error_offset = error_offset;
  u->frame_result_local = result_local;
  u->has_future = true;
  return {ult_id{u}, frame};
}

// spawn_prepare past its common case: outside a ULT, a large frame, or no
// released descriptor at hand.
[[gnu::noinline]] allocated_ult spawn_prepare_elsewhere(sched::worker* w, std::size_t size,
                                                        frame_cleanup_fn cleanup,
                                                        void (*on_exception)(void*, bool),
                                                        std::uint32_t error_offset,
                                                        bool result_local) {
  // A worker's scheduler stack (a flow node's body) may spawn too: fork then
  // queues the child instead of switching to it.
  if (!w) throw_outside_ult("ito::create_thread");
  void* frame = nullptr;
  sched::ult* u = w->stack_provider ? w->stack_provider->allocate(w, size, &frame)
                                    : sched::allocate_slow(w, size, &frame);
  return frame_owned(u, frame, cleanup, on_exception, error_offset, result_local);
}

}  // namespace

// Its common case (a descriptor this worker released) calls nothing, so it
// saves no registers.
allocated_ult spawn_prepare(std::size_t size, frame_cleanup_fn cleanup,
                            void (*on_exception)(void*, bool), std::uint32_t error_offset,
                            bool result_local) {
  sched::worker* w = sched::current_worker();
  void* frame = nullptr;
  if (w) [[likely]] {
    if (sched::ult* u = sched::allocate_released(w, size, &frame)) [[likely]]
      return frame_owned(u, frame, cleanup, on_exception, error_offset, result_local);
  }
  return spawn_prepare_elsewhere(w, size, cleanup, on_exception, error_offset, result_local);
}

void spawn_start(allocated_ult th, void (*func)(void*)) noexcept {
  sched::fork(as_ult(th.id), func, /*id_was_public=*/false);
}

void spawn_start_near(allocated_ult th, void (*func)(void*), const void* data) noexcept {
  sched::fork_near(as_ult(th.id), func, data);
}

void rethrow_stored(result_box<std::exception_ptr>* error) { std::rethrow_exception(error->take()); }

void throw_invalid_future(const char* what) {
  throw usage_error(EINVAL, std::string("ito::future::") + what +
                                ": no ULT (already joined, moved from, or empty)");
}

void throw_no_result() {
  throw usage_error(EINVAL, "ito: the ULT ended by ito::exit() and has no result");
}

void detach_quietly(ult_id id) noexcept {
  // The runtime gone means the ULT is gone with it: nothing is left to free.
  if (sched::g_runtime.load(std::memory_order_acquire)) sched::detach(as_ult(id));
}

void report_orphaned_exception(result_box<std::exception_ptr>* error,
                               unsigned long long ult_id) noexcept {
  unsigned long n = g_orphaned_exceptions.fetch_add(1, std::memory_order_relaxed) + 1;
  if (n > shown_orphaned_exceptions) return;
  std::string what;
  const char* type = "unknown type";
  try {
    std::rethrow_exception(error->take());
  } catch (const std::exception& e) {
    what = std::string(": ") + e.what();
    type = abi::__cxa_current_exception_type()->name();
  } catch (...) {
    if (std::type_info* t = abi::__cxa_current_exception_type()) type = t->name();
  }
  int status = -1;
  char* demangled = abi::__cxa_demangle(type, nullptr, nullptr, &status);
  // A record has no id (ito/detail/task_record.hpp): 0.
  char who[40] = "a ULT";
  if (ult_id != 0) std::snprintf(who, sizeof who, "ULT %llu", ult_id);
  std::fprintf(stderr, "ito: an exception escaped %s, whose future was dropped: %s%s\n", who,
               status == 0 ? demangled : type, what.c_str());
  std::free(demangled);
  if (n == shown_orphaned_exceptions)
    std::fprintf(stderr, "ito: more such exceptions are counted, and the count is said at exit\n");
}

}  // namespace detail

namespace lowlevel {

allocated_ult allocate(std::size_t size) {
  require_ult("ito::lowlevel::allocate");
  void* frame = nullptr;
  sched::ult* u = sched::allocate(size, &frame);
  return {ult_id{u}, frame};
}

void fork(allocated_ult th, void (*func)(void*)) {
  require_ult("ito::lowlevel::fork");
  // The caller had the id before the fork and may have shared it already.
  sched::fork(as_ult(th.id), func, /*id_was_public=*/true);
}

void join(ult_id id) {
  require_ult("ito::join");
  require_no_future(id, "ito::join");
  if (int e = sched::join_claim(as_ult(id))) throw_join_error(e, "ito::join");
  sched::release(as_ult(id));
}

void detach(ult_id id) {
  if (!sched::g_runtime.load(std::memory_order_acquire))
    throw usage_error(EPERM, "ito::detach: the runtime is not running");
  require_no_future(id, "ito::detach");
  if (int e = sched::detach(as_ult(id))) throw_join_error(e, "ito::detach");
}

}  // namespace lowlevel

void yield(bool push_to_head) {
  require_ult("ito::yield");
  sched::yield(push_to_head);
}

void exit() {
  require_ult("ito::exit");
  // Inside a create_thread child that it runs as a call, even the main ULT
  // may: the exit ends that child.
  const sched::ult* self = sched::current_ult();
  if (self->bound && !sched::runs_record_as_call())
    throw usage_error(EPERM, "ito::exit: the main ULT cannot exit; return from it instead");
  sched::exit_current(nullptr);
}

unsigned long long this_ult_id() noexcept {
  sched::ult* u = sched::current_ult();
  return u ? u->id : ~0ull;
}

void sleep_for_ns(long long nanoseconds) {
  require_ult("ito::sleep_for_ns");
  long long deadline;  // saturated: a sleep of LLONG_MAX must not wrap into the past
  sched::sleep_until_ns(__builtin_add_overflow(sched::monotonic_ns(), nanoseconds > 0 ? nanoseconds : 0,
                                               &deadline) ? sched::timer_queue::never : deadline);
}

}  // namespace ito

namespace ito::sched {

void report_orphaned_exception_count() noexcept {
  unsigned long n = g_orphaned_exceptions.exchange(0, std::memory_order_relaxed);
  if (n > shown_orphaned_exceptions)
    std::fprintf(stderr, "ito: %lu exceptions escaped detached ULTs (futures dropped unjoined)\n", n);
}

}  // namespace ito::sched

// The C++ API's non-template parts: seed 003's low-level calls, checked.
#include <cerrno>
#include <string>

#include "ito/error.hpp"
#include "ito/thread.hpp"
#include "ito/ult.hpp"
#include "sched/scheduler.hpp"

namespace ito {
namespace {

sched::ult* as_ult(ult_id id) { return static_cast<sched::ult*>(id.p); }

void require_ult(const char* function) {
  if (!sched::current_ult()) detail::throw_outside_ult(function);
}

// Throws the error that makes `id` not joinable (if any; cold).
[[gnu::noinline, gnu::cold]] void throw_if_not_joinable(ult_id id, const char* function) {
  if (!id.p) throw usage_error(EINVAL, std::string(function) + ": null ULT id");
  auto s = as_ult(id)->join_state.load(std::memory_order_acquire);
  if (s == sched::join_detached)
    throw usage_error(EINVAL, std::string(function) + ": the ULT is detached");
  if (s == sched::join_released)
    throw usage_error(ESRCH, std::string(function) + ": the ULT was already joined");
  if (sched::is_joiner(s))
    throw usage_error(EINVAL, std::string(function) + ": another ULT is already joining it");
  if (as_ult(id) == sched::current_ult())
    throw usage_error(EDEADLK, std::string(function) + ": a ULT cannot join itself");
}

// Validates a handle before join/detach. The common case calls no libstdc++
// (see rethrow_stored in thread.hpp).
inline void require_joinable(ult_id id, const char* function) {
  if (!id.p) [[unlikely]] return throw_if_not_joinable(id, function);
  auto s = as_ult(id)->join_state.load(std::memory_order_acquire);
  if ((s != sched::join_running && s != sched::join_finished) || as_ult(id) == sched::current_ult())
    [[unlikely]] throw_if_not_joinable(id, function);
}

}  // namespace

namespace detail {

void throw_outside_ult(const char* function) {
  throw usage_error(EPERM, std::string(function) +
                               ": must be called from a ULT (start the runtime first, e.g. "
                               "ito::start_main_thread or ito::runtime)");
}

bool ult_finished(ult_id id) noexcept {
  return as_ult(id)->join_state.load(std::memory_order_acquire) == sched::join_finished;
}

void ult_wait(ult_id id) {
  require_ult("ito::join");
  if (id.p && ult_finished(id)) return;
  require_joinable(id, "ito::join");
  sched::wait_finished(as_ult(id));
}

void ult_release(ult_id id) { sched::release(as_ult(id)); }

bool ult_exited(ult_id id) noexcept { return as_ult(id)->exited; }

void set_own_cleanup(void (*cleanup)(void*)) noexcept {
  sched::current_ult()->frame_cleanup = cleanup;
}

allocated_ult spawn_prepare(std::size_t size, void (*cleanup)(void*),
                            void (*on_exception)(void*, bool)) {
  // A worker's scheduler stack (a flow node's body) may spawn too: fork then
  // queues the child instead of switching to it.
  if (!sched::current_worker()) [[unlikely]]
    throw_outside_ult("ito::create_thread");
  void* frame = nullptr;
  sched::ult* u = sched::allocate(size, &frame);
  u->frame_cleanup = cleanup;
  u->frame_catch = on_exception;
  return {ult_id{u}, frame};
}

void spawn_start(allocated_ult th, void (*func)(void*)) noexcept {
  sched::fork(as_ult(th.id), func, /*id_was_public=*/false);
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
  try {
    detach(id);
  } catch (const usage_error&) {
    // The runtime is gone, and the ULT with it: nothing is left to free.
  }
}

}  // namespace detail

allocated_ult allocate(std::size_t size) {
  require_ult("ito::allocate");
  void* frame = nullptr;
  sched::ult* u = sched::allocate(size, &frame);
  return {ult_id{u}, frame};
}

void fork(allocated_ult th, void (*func)(void*)) {
  require_ult("ito::fork");
  // The caller had the id before the fork and may have shared it already.
  sched::fork(as_ult(th.id), func, /*id_was_public=*/true);
}

void join(ult_id id) {
  detail::ult_wait(id);
  sched::release(as_ult(id));
}

void detach(ult_id id) {
  if (!sched::g_runtime.load(std::memory_order_acquire))
    throw usage_error(EPERM, "ito::detach: the runtime is not running");
  if (!id.p) throw usage_error(EINVAL, "ito::detach: null ULT id");
  if (sched::detach(as_ult(id)) != 0)
    throw usage_error(EINVAL, "ito::detach: the ULT is already detached or being joined");
}

void yield(bool push_to_head) {
  require_ult("ito::yield");
  sched::yield(push_to_head);
}

void exit() {
  require_ult("ito::exit");
  if (sched::current_ult()->bound)
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

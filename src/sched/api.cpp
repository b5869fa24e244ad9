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

// Validates a handle before join/detach.
void require_joinable(ult_id id, const char* function) {
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
  if (ult_finished(id)) return;
  require_joinable(id, "ito::join");
  sched::wait_finished(as_ult(id));
}

void ult_release(ult_id id) { sched::release(as_ult(id)); }

bool ult_exited(ult_id id) noexcept { return as_ult(id)->exited; }

void ult_set_cleanup(ult_id id, void (*cleanup)(void*)) noexcept {
  as_ult(id)->frame_cleanup = cleanup;
}

allocated_ult spawn_prepare(std::size_t size, void (*cleanup)(void*)) {
  // A worker's scheduler stack (a flow node's body) may spawn too: fork then
  // queues the child instead of switching to it.
  if (!sched::current_worker()) [[unlikely]]
    throw_outside_ult("ito::create_thread");
  void* frame = nullptr;
  sched::ult* u = sched::allocate(size, &frame);
  u->frame_cleanup = cleanup;
  return {ult_id{u}, frame};
}

void spawn_start(allocated_ult th, void (*func)(void*)) noexcept {
  sched::fork(as_ult(th.id), func, /*id_was_public=*/false);
}

bool is_exit_unwind(const std::exception_ptr& e) noexcept {
  try {
    std::rethrow_exception(e);
  } catch (const sched::exit_unwind&) {
    return true;
  } catch (...) {
    return false;
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
  sched::sleep_until_ns(sched::monotonic_ns() + (nanoseconds > 0 ? nanoseconds : 0));
}

}  // namespace ito

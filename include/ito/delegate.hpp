// SPDX-License-Identifier: Apache-2.0
// ito::delegate: system-call delegation. A ULT hands a blocking function to
// an OS thread of the delegation pool and is suspended; the pool thread that
// finishes wakes exactly that ULT (direct wake-up). Two blocking modes:
//   delegate_mode::block_worker  (mode 1) the worker waits, running nothing else;
//   delegate_mode::keep_running  (mode 2, the default) the worker runs other ULTs.
//
//   ssize_t n = ito::delegate([&] { return ::read(fd, buf, len); });
//
// Called outside a ULT, delegate runs fn inline on the calling thread: an OS
// thread may block anyway, and a hand-off would only add latency.
#pragma once

#include <exception>
#include <functional>
#include <type_traits>
#include <utility>

#include "ito/os_pool.hpp"
#include "ito/thread.hpp"

namespace ito {

enum class delegate_mode {
  block_worker = 1,  // block the ULT and its worker
  keep_running = 2,  // block only the ULT; the worker runs others
};

// The mode delegate(fn) uses: set_default_delegate_mode's, else
// ITO_DELEGATE_MODE (block_worker or keep_running), else keep_running. A bad
// ITO_DELEGATE_MODE is reported on stderr and exits with status 2, like the
// runtime's ITO_* variables.
delegate_mode default_delegate_mode();
void set_default_delegate_mode(delegate_mode mode) noexcept;

// The pool delegated calls run on, started at first use from ITO_POOL_* (a bad
// value exits with status 2 after naming it). It lives until the process ends.
os_pool& delegation_pool();
// Sets the delegation pool's options; only before its first use (else throws
// usage_error(EBUSY)). Bad options throw config_error.
void configure_delegation_pool(const os_pool_options& options);

}  // namespace ito

#include "ito/detail/delegated_call.hpp"

namespace ito {

// Runs fn() on a pool thread and returns its value (or rethrows its
// exception). fn is called by reference; it runs on another OS thread, so its
// thread-local state (errno included) is that thread's.
template <class F>
std::invoke_result_t<F&> delegate(delegate_mode mode, F&& fn) {
  using R = std::invoke_result_t<F&>;
  if (!detail::delegation_applies()) return std::invoke(fn);
  detail::delegated_call<std::remove_reference_t<F>, R> call(fn);
  detail::delegate_and_wait(&call, call.done, mode);
  if (call.error) std::rethrow_exception(call.error);
  return call.result.take();
}

template <class F>
std::invoke_result_t<F&> delegate(F&& fn) {
  return delegate(default_delegate_mode(), std::forward<F>(fn));
}

}  // namespace ito

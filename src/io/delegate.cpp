// SPDX-License-Identifier: Apache-2.0
// The delegation pool and the default mode. The pool is created on first use
// and deliberately never destroyed: ULTs and threads may still delegate while
// static destructors run, and its threads only sleep.
#include "ito/delegate.hpp"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <optional>

#include "common/setting_values.hpp"
#include "io/fork_child.hpp"
#include "sched/scheduler.hpp"

namespace ito {
namespace {

std::mutex g_pool_mutex;
std::atomic<os_pool*> g_pool{nullptr};
std::optional<os_pool_options> g_pool_options;  // guarded by g_pool_mutex

// The pool stands in for threads blocked in the kernel, and under NPTL every
// thread blocks on its own: a cap below what a program blocks at once can
// deadlock it where NPTL does not (LTP pthread_cond_broadcast/1-2: 1000
// threads in a process-shared condition wait, a 1001st waiting for its
// mutex, with 256 pool threads all taken). Its default maximum is therefore
// Go's thread limit, not an os_pool's 256; ITO_POOL_MAX or
// configure_delegation_pool still set it. Threads start only as calls block
// at once, and idle ones retire.
constexpr unsigned delegation_default_max = 10'000;

os_pool_options with_delegation_default(os_pool_options o) {
  if (!o.max_threads && !config::number_setting(config::setting_id::pool_max))
    o.max_threads = delegation_default_max;
  return o;
}

// 0: not decided yet; else a delegate_mode value.
std::atomic<int> g_mode{0};

[[noreturn]] void environment_error(const config_error& e) {
  // The user's environment, not the program, is wrong: say so and stop (as
  // ito::runtime does for ITO_*).
  std::fprintf(stderr, "%s\n", e.what());
  std::exit(2);
}

delegate_mode mode_from_environment() {
  // In the order of the choices declared for ITO_DELEGATE_MODE.
  constexpr delegate_mode modes[] = {delegate_mode::keep_running, delegate_mode::block_worker};
  try {
    return modes[config::choice_setting(config::setting_id::delegate_mode).value_or(0)];
  } catch (const config_error& e) {
    environment_error(e);
  }
}

}  // namespace

delegate_mode default_delegate_mode() {
  int m = g_mode.load(std::memory_order_relaxed);
  if (m == 0) [[unlikely]] {
    int expected = 0;
    g_mode.compare_exchange_strong(expected, static_cast<int>(mode_from_environment()),
                                   std::memory_order_relaxed);
    m = g_mode.load(std::memory_order_relaxed);
  }
  return static_cast<delegate_mode>(m);
}

void set_default_delegate_mode(delegate_mode mode) noexcept {
  g_mode.store(static_cast<int>(mode), std::memory_order_relaxed);
}

os_pool& delegation_pool() {
  if (os_pool* p = g_pool.load(std::memory_order_acquire)) [[likely]] return *p;
  std::lock_guard lock(g_pool_mutex);
  if (os_pool* p = g_pool.load(std::memory_order_relaxed)) return *p;
  os_pool* p = nullptr;
  try {
    p = new os_pool(with_delegation_default(g_pool_options.value_or(os_pool_options{})));
  } catch (const config_error& e) {
    if (e.from_environment()) environment_error(e);
    throw;
  }
  g_pool.store(p, std::memory_order_release);
  return *p;
}

void configure_delegation_pool(const os_pool_options& options) {
  os_pool_options checked = resolve_pool_options(options);  // throws config_error
  std::lock_guard lock(g_pool_mutex);
  if (g_pool.load(std::memory_order_relaxed))
    throw usage_error(EBUSY,
                      "ito::configure_delegation_pool: the delegation pool is already running");
  g_pool_options = options;  // unset fields keep following the environment
  (void)checked;
}

namespace detail {

void pool_before_fork() noexcept { g_pool_mutex.lock(); }
void pool_after_fork_in_parent() noexcept { g_pool_mutex.unlock(); }
std::atomic<os_pool*> g_pool_left_by_fork{nullptr};

void pool_after_fork_in_child() noexcept {
  g_pool_mutex.unlock();
  // Its threads are the parent's: a new pool starts at the next delegation
  // (the old one's memory stays, as the parent's thread stacks do; kept
  // reachable so that a leak checker in the child does not report it).
  g_pool_left_by_fork.store(g_pool.exchange(nullptr, std::memory_order_relaxed),
                            std::memory_order_relaxed);
}

bool delegation_applies() noexcept { return sched::must_not_block_worker(); }

void delegate_and_wait(pool_job* job, completion& done, delegate_mode mode) {
  delegation_pool().post(job);
  done.wait(mode == delegate_mode::block_worker);
}

}  // namespace detail
}  // namespace ito

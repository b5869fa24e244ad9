// SPDX-License-Identifier: Apache-2.0
// Per-thread event buffers and the trace's lifetime (see trace.hpp).
#include "trace/trace.hpp"

#include <pthread.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <new>
#include <string>

#include "common/setting_values.hpp"
#include "ito/options.hpp"
#include "trace/trace_buffer.hpp"

namespace ito::trace {

std::atomic<bool> g_on{false};
constinit thread_local thread_buffer* t_buffer __attribute__((tls_model("initial-exec"))) = nullptr;

namespace {

std::mutex g_lock;                            // guards g_buffers' list and g_clocks
std::atomic<thread_buffer*> g_buffers{nullptr};  // every buffer ever made
std::atomic<unsigned> g_trace{0};             // the current trace (one per traced runtime)
clock_span g_clocks;

thread_buffer* make_buffer() noexcept {
  auto* b = new (std::nothrow) thread_buffer;
  if (!b) return nullptr;
  // Address space only: pages become resident as events are written.
  b->events = static_cast<event*>(std::malloc(sizeof(event) * thread_buffer::capacity));
  if (!b->events) {
    delete b;
    return nullptr;
  }
  std::lock_guard hold(g_lock);
  b->next = g_buffers.load(std::memory_order_relaxed);
  g_buffers.store(b, std::memory_order_release);
  return b;
}

}  // namespace

clock_reading read_clocks() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return {read_tsc(), ts.tv_sec * 1'000'000'000ll + ts.tv_nsec};
}

void record_slow(kind what, std::uint64_t arg) noexcept {
  thread_buffer* b = t_buffer;
  if (!b) [[unlikely]] {
    if (!(b = t_buffer = make_buffer())) return;
  }
  const unsigned trace = g_trace.load(std::memory_order_relaxed);
  if (b->trace.load(std::memory_order_relaxed) != trace) [[unlikely]] {
    // First event of this thread in this trace: its own reset, then a fresh
    // name (a worker is named when it starts).
    b->count.store(0, std::memory_order_relaxed);
    b->dropped.store(0, std::memory_order_relaxed);
    pthread_getname_np(pthread_self(), b->name, sizeof b->name);
    b->tid = static_cast<long>(gettid());
    b->trace.store(trace, std::memory_order_release);
  }
  const std::size_t n = b->count.load(std::memory_order_relaxed);
  if (n == thread_buffer::capacity) [[unlikely]] {
    b->dropped.store(b->dropped.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    return;
  }
  b->events[n] = {read_tsc(), arg, what};
  b->count.store(n + 1, std::memory_order_release);
}

namespace {

// A process that ends without stopping its runtime (a pthread program under
// the POSIX layer whose threads still run at exit) still gets its trace;
// the threads may go on recording meanwhile, which the buffers allow.
void finish_at_exit() { finish(); }

// A forked child (and a runtime it starts) must not overwrite its parent's
// trace.
// g_lock is held across fork, so the child never inherits it locked.
bool g_in_forked_child = false;
void lock_before_fork() { g_lock.lock(); }
void unlock_in_parent() { g_lock.unlock(); }
void stop_in_child() {
  g_in_forked_child = true;
  g_on.store(false, std::memory_order_relaxed);
  g_lock.unlock();
}

}  // namespace

void start() noexcept {
  const char* path = config::text_setting(config::setting_id::trace);
  if (!path) return;
  static bool hooked = false;  // under g_lock
  std::lock_guard hold(g_lock);
  if (g_in_forked_child) return;
  if (!hooked) {
    hooked = true;
    std::atexit(&finish_at_exit);
    pthread_atfork(&lock_before_fork, &unlock_in_parent, &stop_in_child);
  }
  g_trace.fetch_add(1, std::memory_order_relaxed);
  g_clocks.start = read_clocks();
  g_on.store(true, std::memory_order_relaxed);
}

void finish() noexcept {
  if (!g_on.load(std::memory_order_relaxed)) return;
  g_on.store(false, std::memory_order_relaxed);  // the workers have ended
  const char* path = config::text_setting(config::setting_id::trace);
  std::lock_guard hold(g_lock);
  g_clocks.end = read_clocks();
  if (path)
    write_trace(path, g_buffers.load(std::memory_order_acquire),
                g_trace.load(std::memory_order_relaxed), g_clocks);
}

}  // namespace ito::trace

// SPDX-License-Identifier: Apache-2.0
// The trace's storage: one buffer per OS thread that recorded, and the clock
// readings that turn cycle-counter stamps into time.
#pragma once

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "trace/trace.hpp"

namespace ito::trace {

struct event {
  std::uint64_t tsc;
  std::uint64_t arg;
  kind what;
};

// Written by its thread only; read by the writer at the runtime's end, up to
// `count` (published with release). A buffer is never freed (a pool thread
// may outlive the runtime and record late): a later trace reuses it, reset by
// its own thread when it first records for that trace.
struct thread_buffer {
  static constexpr std::size_t capacity = std::size_t{1} << 20;  // 24 MiB of address space
  event* events = nullptr;
  std::atomic<std::size_t> count{0};
  std::atomic<std::uint64_t> dropped{0};  // events past capacity
  std::atomic<unsigned> trace{0};         // the trace its events belong to
  char name[16] = {};
  long tid = 0;
  thread_buffer* next = nullptr;  // every buffer, newest first
};

// A cheap monotonic counter, calibrated against CLOCK_MONOTONIC at the trace's
// start and end (clock_span): the TSC on x86-64, the generic timer's virtual
// count on aarch64 (Linux lets user code read it; no system call either way).
#if defined(__x86_64__)
inline std::uint64_t read_tsc() noexcept { return __rdtsc(); }
#elif defined(__aarch64__)
inline std::uint64_t read_tsc() noexcept {
  std::uint64_t v;
  asm volatile("mrs %0, cntvct_el0" : "=r"(v));
  return v;
}
#else
#error "ito: no trace clock for this architecture"
#endif

struct clock_reading {
  std::uint64_t tsc = 0;
  std::int64_t ns = 0;  // CLOCK_MONOTONIC
};
clock_reading read_clocks() noexcept;

struct clock_span {
  clock_reading start, end;
  // CLOCK_MONOTONIC in microseconds, for a TSC stamp: one clock for every
  // process of a host, so the traces of a job's ranks merge onto one
  // timeline (scripts/merge-traces.py).
  double micros(std::uint64_t tsc) const noexcept {
    const double ns_per_tick = end.tsc > start.tsc ? double(end.ns - start.ns) / double(end.tsc - start.tsc) : 0;
    return ((double(tsc) - double(start.tsc)) * ns_per_tick + double(start.ns)) / 1000.0;
  }
};

// Writes the Chrome trace-event JSON of every buffer of trace `trace`.
void write_trace(const char* path, const thread_buffer* buffers, unsigned trace,
                 const clock_span& clocks) noexcept;

}  // namespace ito::trace

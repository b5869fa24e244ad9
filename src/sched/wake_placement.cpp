// SPDX-License-Identifier: Apache-2.0
#include "sched/wake_placement.hpp"

#include <sched.h>

#include <cstddef>

#include "sched/worker.hpp"

namespace ito::sched {

namespace {

// The calling thread's CPUs into `cpus`, where narrowing them is worth it.
// Read each time: worker 0 is the program's main thread, whose affinity the
// program may change while the runtime runs. With more workers than CPUs
// the kernel must share CPUs between them anyway, and narrowing only takes
// choices from its balancing (4 workers on 2 CPUs: 7 % slower phases
// narrowed); so does ITO_BIND, where each worker has one CPU.
bool worth_narrowing(const worker* w, cpu_set_t& cpus) noexcept {
  return !w->rt->opts.bind.value_or(false) && sched_getaffinity(0, sizeof cpus, &cpus) == 0 &&
         CPU_COUNT(&cpus) > 1 && static_cast<std::size_t>(CPU_COUNT(&cpus)) >= w->rt->workers.size();
}

// `cpus` without `cpu`; false where `cpu` is not in it.
bool without_cpu(const cpu_set_t& cpus, int cpu, cpu_set_t& elsewhere) noexcept {
  if (cpu < 0 || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &cpus)) return false;
  elsewhere = cpus;
  CPU_CLR(cpu, &elsewhere);
  return true;
}

}  // namespace

void remember_park_cpus(worker* w) noexcept { w->park_cpus_known = worth_narrowing(w, w->park_cpus); }

void keep_off_waker_cpu(worker* w) noexcept {
  if (!w->park_cpus_known || w->narrowed) return;
  const pid_t tid = w->tid.load(std::memory_order_relaxed);
  cpu_set_t elsewhere;
  if (tid == 0 || !without_cpu(w->park_cpus, sched_getcpu(), elsewhere)) return;
  if (sched_setaffinity(tid, sizeof elsewhere, &elsewhere) != 0) return;
  w->narrowed = true;
  ++w->rt->wakes_kept_off_waker;
}

void start_off_creator_cpu(worker* w, pthread_attr_t* attr) noexcept {
  // The new thread would inherit the creator's CPUs: park_cpus is what it
  // widens back to.
  w->creator_cpu = sched_getcpu();
  cpu_set_t elsewhere;
  if (!worth_narrowing(w, w->park_cpus) || !without_cpu(w->park_cpus, w->creator_cpu, elsewhere)) return;
  w->narrowed = pthread_attr_setaffinity_np(attr, sizeof elsewhere, &elsewhere) == 0;
}

bool take_narrowed(worker* w) noexcept {
  const bool narrowed = w->narrowed;
  w->narrowed = false;
  return narrowed;
}

void restore_park_cpus(worker* w) noexcept {
  sched_setaffinity(0, sizeof w->park_cpus, &w->park_cpus);
}

}  // namespace ito::sched

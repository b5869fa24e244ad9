// SPDX-License-Identifier: Apache-2.0
#include "sched/wake_placement.hpp"

#include <sched.h>

#include <cstddef>

#include "sched/worker.hpp"

namespace ito::sched {

void remember_park_cpus(worker* w) noexcept {
  // Read each time: worker 0 is the program's main thread, whose affinity
  // the program may change while the runtime runs. With more workers than
  // CPUs the kernel must share CPUs between them anyway, and narrowing only
  // takes choices from its balancing (4 workers on 2 CPUs: 7 % slower
  // phases narrowed); so does ITO_BIND, where each worker has one CPU.
  w->park_cpus_known = !w->rt->opts.bind.value_or(false) &&
                       sched_getaffinity(0, sizeof w->park_cpus, &w->park_cpus) == 0 &&
                       CPU_COUNT(&w->park_cpus) > 1 &&
                       static_cast<std::size_t>(CPU_COUNT(&w->park_cpus)) >= w->rt->workers.size();
}

void keep_off_waker_cpu(worker* w) noexcept {
  if (!w->park_cpus_known || w->narrowed) return;
  const pid_t tid = w->tid.load(std::memory_order_relaxed);
  const int here = sched_getcpu();
  if (tid == 0 || here < 0 || here >= CPU_SETSIZE || !CPU_ISSET(here, &w->park_cpus)) return;
  cpu_set_t elsewhere = w->park_cpus;
  CPU_CLR(here, &elsewhere);
  if (sched_setaffinity(tid, sizeof elsewhere, &elsewhere) != 0) return;
  w->narrowed = true;
  ++w->rt->wakes_kept_off_waker;
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

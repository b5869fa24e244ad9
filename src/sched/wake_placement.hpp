// SPDX-License-Identifier: Apache-2.0
// Where a woken worker runs. A parked worker woken by a thread running on
// CPU c should run elsewhere: the waker is busy on c, usually with the work
// that caused the wake-up. Linux's wake-up placement does not always see
// that: in a VM it counts an idle vCPU as preempted (the host descheduled
// it) and queues the woken thread on the waker's busy CPU, where it waits
// until the waker blocks or a load balancer moves it (0.4-1 ms measured on a
// quiet 2-vCPU VM: a fork-join phase after idling ran serially). So the
// waker takes its own CPU out of the sleeper's affinity for the wake-up, and
// the woken worker puts its affinity back before it looks for work. Off the
// fast paths: a park and a wake-up cost a futex system call already.
//
// A new worker thread is placed the same way: started from worker 0 on CPU
// c, it stayed on c beside worker 0 for up to 80 ms (perf, every CPU
// sampled: fib's first 2-worker run took 168 ms where the next took 130).
// So it starts off c too, and widens its affinity again at once.
#pragma once

#include <pthread.h>

namespace ito::sched {

struct worker;

// The worker, about to park: remembers its affinity, which a waker may
// narrow. Off under ITO_BIND (each worker has one CPU already).
void remember_park_cpus(worker* w) noexcept;
// The waker, with the idle mutex held, before it wakes w: keeps w off the
// CPU the waker runs on, where w's remembered CPUs include another.
void keep_off_waker_cpu(worker* w) noexcept;
// The woken worker, with the idle mutex held as it leaves the idle list:
// whether a waker narrowed its affinity (then restore_park_cpus, unlocked).
bool take_narrowed(worker* w) noexcept;
void restore_park_cpus(worker* w) noexcept;
// The creator, before it starts w's OS thread: narrows `attr` to keep the
// thread off the creator's CPU where the creator's CPUs include another
// (the thread then calls take_narrowed and restore_park_cpus first thing).
void start_off_creator_cpu(worker* w, pthread_attr_t* attr) noexcept;

}  // namespace ito::sched

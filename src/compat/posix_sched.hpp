// SPDX-License-Identifier: Apache-2.0
// POSIX scheduling policies and priorities of ULTs: accepted and checked as
// Linux checks them for NPTL (EINVAL, EPERM), kept per ULT and reported back
// (pthread_getschedparam, pthread_getattr_np), inherited by new threads. The
// workers do not order ULTs by them: docs/POSIX.md, "Scheduling", says why.
#pragma once

#include <pthread.h>
#include <sched.h>

#include <cstdint>

namespace ito::sched {
struct ult;
}

namespace ito::posix {

struct sched_choice {
  int policy = SCHED_OTHER;
  int priority = 0;
};

// 0; EINVAL: a policy Linux does not have for threads, or a priority outside
// sched_get_priority_min/max of the policy; EPERM: a real-time policy the
// process may not take (no CAP_SYS_NICE, the priority above RLIMIT_RTPRIO),
// where the kernel refuses NPTL.
int check_sched(sched_choice c) noexcept;

// A ULT's choice (SCHED_OTHER at 0 unless one was stored), and storing one.
sched_choice sched_of(const sched::ult* u) noexcept;
void set_sched(sched::ult* u, sched_choice c) noexcept;

// What pthread_create gives the child: the creator's (PTHREAD_INHERIT_SCHED,
// the default) or the attribute's, checked. 0, EINVAL or EPERM.
int sched_for_child(const pthread_attr_t* attr, sched_choice* out) noexcept;

}  // namespace ito::posix

// SPDX-License-Identifier: Apache-2.0
// Scheduling policies and priorities of ULTs (posix_sched.hpp). Nothing here
// runs unless a program asks: a ULT that never had a policy costs nothing.
#define ITO_PTHREAD_NO_RENAME 1  // the plain names below are glibc's
#include "compat/posix_sched.hpp"

#include <linux/capability.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

#include "compat/posix_attr.hpp"
#include "sched/scheduler.hpp"
#include "sched/ult.hpp"

namespace ito::posix {
namespace {

// glibc's attribute flags (nptl/internaltypes.h), set by its own
// pthread_attr_setinheritsched/setschedparam/setschedpolicy.
constexpr int attr_flag_explicit_sched = 0x0002;
constexpr int attr_flag_param_set = 0x0020;
constexpr int attr_flag_policy_set = 0x0040;

bool is_realtime(int policy) { return policy == SCHED_FIFO || policy == SCHED_RR; }

// The kernel's rule for taking a real-time priority (sched_setscheduler):
// CAP_SYS_NICE, or a priority within RLIMIT_RTPRIO.
bool may_take_realtime(int priority) noexcept {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3]{};
  if (::syscall(SYS_capget, &header, data) == 0 &&
      (data[CAP_TO_INDEX(CAP_SYS_NICE)].effective & CAP_TO_MASK(CAP_SYS_NICE)) != 0)
    return true;
  rlimit limit{};
  return ::getrlimit(RLIMIT_RTPRIO, &limit) == 0 &&
         (limit.rlim_cur == RLIM_INFINITY || static_cast<rlim_t>(priority) <= limit.rlim_cur);
}

// Policy in the high half, priority (0..99) in the low: one atomic word.
std::uint32_t encode(sched_choice c) {
  return static_cast<std::uint32_t>(c.policy) << 16 | static_cast<std::uint16_t>(c.priority);
}

}  // namespace

int check_sched(sched_choice c) noexcept {
  switch (c.policy) {
    case SCHED_OTHER:
    case SCHED_BATCH:
    case SCHED_IDLE:
    case SCHED_FIFO:
    case SCHED_RR: break;
    default: return EINVAL;  // SCHED_DEADLINE too: NPTL's calls cannot set it either
  }
  if (c.priority < ::sched_get_priority_min(c.policy) ||
      c.priority > ::sched_get_priority_max(c.policy))
    return EINVAL;
  if (is_realtime(c.policy) && !may_take_realtime(c.priority)) return EPERM;
  return 0;
}

sched_choice sched_of(const sched::ult* u) noexcept {
  if (u->sched_for.load(std::memory_order_acquire) != u->id) return {};
  const std::uint32_t v = u->sched_value.load(std::memory_order_relaxed);
  return {static_cast<int>(v >> 16), static_cast<int>(v & 0xffff)};
}

void set_sched(sched::ult* u, sched_choice c) noexcept {
  u->sched_value.store(encode(c), std::memory_order_relaxed);
  u->sched_for.store(u->id, std::memory_order_release);
}

int sched_for_child(const pthread_attr_t* attr, sched_choice* out) noexcept {
  sched::ult* self = sched::current_ult();
  const sched_choice mine = self ? sched_of(self) : sched_choice{};
  *out = mine;
  if (!attr) return 0;
  const glibc_attr* a = as_attr(attr);
  if (!(a->flags & attr_flag_explicit_sched)) return 0;
  // glibc takes what the attribute does not set from the creator.
  if (a->flags & attr_flag_policy_set) out->policy = a->schedpolicy;
  if (a->flags & attr_flag_param_set) out->priority = a->schedparam.sched_priority;
  return check_sched(*out);
}

}  // namespace ito::posix

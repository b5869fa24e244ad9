// SPDX-License-Identifier: Apache-2.0
// Priority-protect mutexes (PTHREAD_PRIO_PROTECT): the ceiling is kept and
// reported (pthread_mutex_get/setprioceiling), not acted on: a holder's
// priority is not raised, as ULTs are not ordered by priority
// (docs/POSIX.md, "Scheduling"). The mutex's 40 bytes are all ito::mutex's,
// so a marked mutex (mutex_access::protect_bit) finds its ceiling in a side
// table by address; only such mutexes have an entry, and nothing on the lock
// and unlock paths looks at it.
#include <sched.h>

#include <mutex>
#include <unordered_map>

#include "compat/posix_internal.hpp"
#include "compat/posix_mutex.hpp"
#include "compat/posix_pshared.hpp"
#include "ito/detail/spinlock.hpp"
#include "ito/pthread.h"

namespace ito::posix {
namespace {

using access = detail::mutex_access;

// glibc's pthread_mutexattr_t word (nptl/pthreadP.h): the protocol and the
// ceiling its own setprotocol/setprioceiling store.
constexpr unsigned attr_protocol_shift = 28;
constexpr unsigned attr_protocol_mask = 0x30000000u;
constexpr unsigned attr_ceiling_shift = 12;
constexpr unsigned attr_ceiling_mask = 0x00fff000u;

detail::spinlock g_lock;
std::unordered_map<const void*, int>& ceilings() {
  static auto* table = new std::unordered_map<const void*, int>();  // never freed: used at exit
  return *table;
}

bool valid_ceiling(int c) {
  return c >= ::sched_get_priority_min(SCHED_FIFO) && c <= ::sched_get_priority_max(SCHED_FIFO);
}

bool is_protect(const pthread_mutex_t* m) {
  return !pshared::is_mutex(m) && access::is_protect(as_mutex(const_cast<pthread_mutex_t*>(m)));
}

int ceiling_of(const pthread_mutex_t* m) {
  std::lock_guard lock(g_lock);
  auto it = ceilings().find(m);
  return it != ceilings().end() ? it->second : ::sched_get_priority_min(SCHED_FIFO);
}

}  // namespace

void note_protect(pthread_mutex_t* m, const pthread_mutexattr_t* attr) {
  const auto word = *reinterpret_cast<const unsigned*>(attr);
  if ((word & attr_protocol_mask) >> attr_protocol_shift != PTHREAD_PRIO_PROTECT) return;
  int ceiling = static_cast<int>((word & attr_ceiling_mask) >> attr_ceiling_shift);
  if (ceiling == 0) ceiling = ::sched_get_priority_min(SCHED_FIFO);  // unset: as glibc
  {
    std::lock_guard lock(g_lock);
    ceilings()[m] = ceiling;
  }
  access::mark_protect(as_mutex(m));
}

void forget_protect(pthread_mutex_t* m) noexcept {
  if (!is_protect(m)) return;
  std::lock_guard lock(g_lock);
  ceilings().erase(m);
}

}  // namespace ito::posix

extern "C" {

// EINVAL for a mutex that is not priority-protect, as NPTL.
int ito_pthread_mutex_getprioceiling(const pthread_mutex_t* mutex, int* ceiling) {
  if (!mutex || !ceiling || !ito::posix::is_protect(mutex)) return EINVAL;
  *ceiling = ito::posix::ceiling_of(mutex);
  return 0;
}

// POSIX: changed while holding the mutex (taken here unless the caller
// holds it already, as NPTL does), the old ceiling given back.
int ito_pthread_mutex_setprioceiling(pthread_mutex_t* mutex, int ceiling, int* old_ceiling) {
  if (!mutex || !ito::posix::is_protect(mutex) || !ito::posix::valid_ceiling(ceiling))
    return EINVAL;
  const bool held =
      ito::detail::mutex_access::held_by(ito::posix::as_mutex(mutex), ito::posix::identity());
  if (!held) {
    if (int e = ito_pthread_mutex_lock(mutex)) return e;
  }
  {
    std::lock_guard lock(ito::posix::g_lock);
    int& c = ito::posix::ceilings()[mutex];
    if (old_ceiling) *old_ceiling = c;
    c = ceiling;
  }
  if (!held) ito_pthread_mutex_unlock(mutex);
  return 0;
}

}  // extern "C"

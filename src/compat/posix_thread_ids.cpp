// SPDX-License-Identifier: Apache-2.0
// gettid() and tgkill() for ULTs. NPTL gives each thread a kernel id, and
// programs use it to tell threads apart (CPython's threading.get_native_id,
// log lines, thread-id-keyed tables); on ULTs every thread of a worker would
// read that worker's id. A thread other than the main one gets a number
// above the kernel's range of ids (PID_MAX_LIMIT, 2^22 on 64-bit Linux), so
// no kernel call can take it for another thread: its handle's slot (24 bits)
// and that slot's reuse count modulo 127 (7 bits), distinct among live
// threads and not the id of the slot's last 126 threads (a detached thread's
// slot is free again as it ends: the kernel, too, hands ids out in turn). The
// main thread keeps its OS thread's id (= the process id, as under NPTL).
// tgkill to such a number signals that thread (ito_pthread_kill); other
// calls that take a thread id (sched_setaffinity, /proc/self/task/ID) find
// no such thread: docs/POSIX.md, "Thread ids".
#define ITO_PTHREAD_NO_RENAME 1  // the plain names below are glibc's
#include <signal.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>

#include "compat/posix_internal.hpp"
#include "ito/pthread.h"
#include "sched/handles.hpp"
#include "sched/scheduler.hpp"

namespace {

namespace handles = ito::sched::handles;

constexpr pid_t first_ult_id = pid_t{1} << 22;  // PID_MAX_LIMIT on 64-bit Linux
constexpr unsigned slot_bits = 24, turns = 127;   // first_ult_id + 127 << 24 < 2^31

pid_t id_of(handles::value h) noexcept {
  const auto turn = static_cast<pid_t>(handles::reuses_of(h) % turns);
  return first_ult_id + (turn << slot_bits) + static_cast<pid_t>(handles::index_of(h));
}

// The live thread whose id is `tid`, or 0.
handles::value handle_of(pid_t tid) noexcept {
  const auto n = static_cast<std::uint32_t>(tid - first_ult_id);
  const handles::value h = handles::live_at(n & ((1u << slot_bits) - 1));
  return h != 0 && id_of(h) == tid ? h : 0;
}

}  // namespace

pid_t ito::posix::thread_id_of(std::uint64_t handle) noexcept { return id_of(handle); }

extern "C" {

pid_t ito_gettid(void) {
  ito::sched::ult* u = ito::sched::current_ult();
  if (!u || u == &ito::sched::current_worker()->rt->main_ult) return ::gettid();
  const handles::value h = handles::of(u);
  if (h == 0) return ::gettid();  // no slot left (16M live handles)
  return id_of(h);
}

int ito_tgkill(pid_t pid, pid_t tid, int sig) {
  if (tid < first_ult_id || pid != ::getpid()) return ::tgkill(pid, tid, sig);
  const handles::value h = handle_of(tid);
  const int e = h ? ito_pthread_kill(static_cast<pthread_t>(h), sig) : ESRCH;
  if (e == 0) return 0;
  errno = e;
  return -1;
}

}  // extern "C"

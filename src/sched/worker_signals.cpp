// SPDX-License-Identifier: Apache-2.0
#include "sched/worker_signals.hpp"

#include <pthread.h>

#include <initializer_list>

#include "sched/preempt.hpp"

namespace ito::sched {

const sigset_t& asynchronous_signals() noexcept {
  static const sigset_t set = [] {
    sigset_t s;
    sigfillset(&s);
    for (int sync : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS, SIGPIPE, SIGXFSZ})
      sigdelset(&s, sync);
    return s;
  }();
  return set;
}

void block_asynchronous_signals(bool keep_preempt_signal) noexcept {
  sigset_t set = asynchronous_signals();
  if (keep_preempt_signal) sigdelset(&set, preempt_signal);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

}  // namespace ito::sched

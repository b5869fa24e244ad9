// SPDX-License-Identifier: Apache-2.0
#include "io/fairness.hpp"

#include "sched/scheduler.hpp"

namespace ito::detail {
namespace {

struct run_without_park {
  const sched::ult* ult = nullptr;
  unsigned calls = 0;
};
// Per worker (initial-exec, as the scheduler's own TLS): read afresh on each
// call, so a ULT that moved reads its new worker's.
constinit thread_local run_without_park t_run __attribute__((tls_model("initial-exec")));

}  // namespace

void count_call_without_park() noexcept {
  const sched::ult* self = sched::current_ult();
  run_without_park& run = t_run;
  if (run.ult != self) {
    run.ult = self;
    run.calls = 0;
  }
  if (++run.calls < calls_before_yield) return;
  run.calls = 0;
  sched::yield(true);
}

void end_run_without_park() noexcept { t_run.calls = 0; }

}  // namespace ito::detail

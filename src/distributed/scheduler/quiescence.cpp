// SPDX-License-Identifier: Apache-2.0
#include "distributed/scheduler/quiescence.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <mutex>

#include "distributed/progress.hpp"
#include "distributed/scheduler/local_runtime.hpp"
#include "distributed/scheduler/remote_steal.hpp"
#include "distributed/scheduler/ult_moves.hpp"
#include "distributed/scheduler/wire.hpp"
#include "ito/runtime.hpp"
#include "sched/runtime_control.hpp"
#include "sched/scheduler.hpp"

namespace ito::dist::detail::quiescence {
namespace {

// When the end of a run, waiting for ULTs still running, says which.
constexpr std::int64_t unfinished_report_after_ns = 5'000'000'000;

std::atomic<bool> g_stop{false};

void on_stop(const header&, const char*, int) {
  remote_steal::stop_requesting();
  g_stop.store(true, std::memory_order_release);
}

// Waits, as a ULT (the rank's workers run meanwhile), until done() holds
// under the poll lock. Backs off to 2 ms between looks: on a rank with
// nothing to do, each look wakes a worker, and a worker that spins for work
// takes the core another rank computes on (4 ranks on 2 cores: the progress
// threads starved for 100 ms at a time when this looked every 50 µs).
template <class Done>
void poll_until(Done done) {
  std::int64_t pause_ns = 50'000;
  for (;;) {
    {
      std::lock_guard hold(wire::poll_lock());
      if (done()) return;
    }
    nudge_progress();
    sched::sleep_until_ns(sched::monotonic_ns() + pause_ns);
    pause_ns = std::min<std::int64_t>(pause_ns * 2, 2'000'000);
  }
}

// Under the poll lock (arrivals and departures are handled under it): no ULT
// is live here but the main ULT (nor one placed here that arrived before the
// runtime, not yet counted by it: a run that ended over it lost its writes
// and sent its end into the next run), and nothing this rank sent is still on
// its way out or waits for an answer.
bool quiescent_here() {
  sched::runtime_state* rt = local_runtime();
  return (!rt || sched::quiescent_locally(rt)) && !ult_moves::early_arrivals_waiting() &&
         remote_steal::none_outstanding() && wire::idle();
}

}  // namespace

void start() {
  g_stop.store(false, std::memory_order_relaxed);
  wire::on(msg::stop, &on_stop);
}

void request_stop_all() {
  for (int r = 0; r < wire::size(); ++r)
    if (r != wire::rank()) wire::queue(wire::make(r, msg::stop, nullptr));
  remote_steal::stop_requesting();
  g_stop.store(true, std::memory_order_release);
}

void wait_for_stop() {
  poll_until([] { return g_stop.load(std::memory_order_acquire); });
}

void quiesce() {
  // The main function's return is not quiescence: a ULT whose future was
  // dropped may still run, here or elsewhere, and send. Waves of sums
  // (Mattern's four counters): each rank joins a wave only once it is
  // quiescent itself (quiescent_here) and adds what it sent and received so
  // far. Two waves in a row with the same sums, sent equal to received, mean
  // no message moved in between: every rank was quiescent at its second
  // contribution and nothing could wake it. Each wave's collective runs on
  // this thread (the main ULT, on the process's main stack) beside the
  // progress thread's point-to-point calls.
  std::uint64_t last[2] = {~std::uint64_t{0}, 0};
  for (;;) {
    std::uint64_t mine[2] = {0, 0}, all[2] = {0, 0};
    const std::int64_t report_at = sched::monotonic_ns() + unfinished_report_after_ns;
    bool reported = false;
    poll_until([&] {
      if (!quiescent_here()) {
        if (!reported && sched::monotonic_ns() > report_at) {
          reported = true;  // once: the program may be waiting on purpose
          std::fprintf(stderr,
                       "ito: dist: rank %d: the main function has returned, but ULTs still run "
                       "here after %lld s; the job ends when every rank's have finished:\n",
                       wire::rank(), static_cast<long long>(unfinished_report_after_ns / 1'000'000'000));
          ito::dump_ults(stderr);
        }
        return false;
      }
      mine[0] = wire::sent_total();
      mine[1] = wire::received_total();
      return true;
    });
    MPI_Request wave;
    MPI_Iallreduce(mine, all, 2, MPI_UINT64_T, MPI_SUM, wire::comm(), &wave);
    poll_until([&] {
      int done = 0;
      MPI_Test(&wave, &done, MPI_STATUS_IGNORE);
      return done != 0;
    });
    if (all[0] == all[1] && all[0] == last[0] && all[1] == last[1]) return;
    last[0] = all[0];
    last[1] = all[1];
  }
}

}  // namespace ito::dist::detail::quiescence

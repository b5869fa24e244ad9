// SPDX-License-Identifier: Apache-2.0
// ito::dist::start_main_thread: one ito runtime per rank, joined into one
// scheduler by the distributed scheduler (scheduler/migration.hpp); rank 0 runs the main
// function, every rank's workers steal.
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>

#include "distributed/dist_state.hpp"
#include "distributed/progress.hpp"
#include "distributed/scheduler/migration.hpp"
#include "distributed/scheduler/quiescence.hpp"
#include "distributed/scheduler/stack_area.hpp"
#include "ito/dist.hpp"
#include "ito/error.hpp"
#include "ito/runtime.hpp"
#include "sched/worker.hpp"

namespace ito::dist::detail {

void run_main_thread(void (*body)(void*), void* arg, void* result, std::size_t result_bytes) {
  if (scheduler_running())
    throw usage_error(EPERM, "ito::dist::start_main_thread: called from inside the main function "
                             "of another start_main_thread (only rank 0 runs that)");
  std::optional<ito::dist::runtime> own;  // the program may have made one already
  if (!current()) own.emplace();
  const dist_state& st = *current();
  if (!progress_running()) {
    std::fprintf(stderr,
                 "ito: dist: the distributed scheduler handles its messages on the progress "
                 "thread: ITO_DIST_PROGRESS_US must not be 0\n");
    std::exit(2);
  }
  stack_area area;
  reserve_stack_area(st.rank, st.size, area);
  start_migration(area, st.rank, st.size, st.node.node_of_rank);
  std::exception_ptr error;
  {
    ito::runtime rt;  // ITO_WORKERS workers; this thread becomes the main ULT
    if (sched::g_runtime.load(std::memory_order_acquire)->stack_provider) {
      std::fprintf(stderr,
                   "ito: dist: the distributed scheduler moves fixed-size stacks: unset ITO_STACK "
                   "or set ITO_STACK=fixed\n");
      std::exit(2);
    }
    set_runtime(sched::g_runtime.load(std::memory_order_acquire));
    if (st.rank == 0) {
      try {
        body(arg);
      } catch (...) {
        error = std::current_exception();
      }
      quiescence::request_stop_all();
    } else {
      quiescence::wait_for_stop();
    }
    quiescence::quiesce();
    set_runtime(nullptr);
  }
  stop_migration();
  release_stack_area(area);
  if (result_bytes && st.size > 1)
    MPI_Bcast(result, static_cast<int>(result_bytes), MPI_BYTE, 0, MPI_COMM_WORLD);
  if (error) std::rethrow_exception(error);
}

}  // namespace ito::dist::detail

namespace ito::dist {

scheduler_stats last_scheduler_stats() noexcept { return detail::current_counts(); }

}  // namespace ito::dist

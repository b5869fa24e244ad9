// SPDX-License-Identifier: Apache-2.0
// ito::dist::runtime: ASLR off, MPI up, the region reserved; and the queries.
#include <mpi.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "common/setting_values.hpp"
#include "distributed/aslr.hpp"
#include "distributed/dsm/async_fence.hpp"
#include "distributed/dist_state.hpp"
#include "distributed/doorbells.hpp"
#include "distributed/dsm/diff_mail.hpp"
#include "distributed/dsm/dsm.hpp"
#include "distributed/dsm/dsm_alloc.hpp"
#include "distributed/dsm/dsm_bookkeeping.hpp"
#include "distributed/dsm/iso_region.hpp"
#include "distributed/large_stack.hpp"
#include "distributed/scheduler/migration.hpp"
#include "distributed/mpi_session.hpp"
#include "distributed/peer_watch.hpp"
#include "distributed/host_cpus.hpp"
#include "distributed/progress.hpp"
#include "distributed/dsm/race_check.hpp"
#include "distributed/dsm/remote_free.hpp"
#include "distributed/dsm/region_size.hpp"
#include "ito/delegate.hpp"
#include "ito/dist.hpp"
#include "ito/error.hpp"
#include "ito/options.hpp"
#include "sched/scheduler.hpp"

namespace ito::dist {
namespace detail {
namespace {

std::atomic<dist_state*> g_state{nullptr};
std::atomic<bool> g_starting{false};
bool g_stats = false;  // ITO_STATS, read when the runtime starts

}  // namespace

dist_state* current() noexcept { return g_state.load(std::memory_order_acquire); }

dist_state& require(const char* what) {
  dist_state* st = current();
  if (!st)
    throw usage_error(EPERM, std::string("ito: dist: ") + what +
                                 " needs a running ito::dist::runtime (create one first, on "
                                 "every rank)");
  return *st;
}

// Only rank 0 runs the function given to start_main_thread, so a collective
// call there would wait for the other ranks for ever.
void refuse_inside_the_scheduler(const char* what) {
  if (scheduler_running())
    throw usage_error(EPERM, std::string(what) +
                                 " is collective (every rank must call it), but inside "
                                 "ito::dist::start_main_thread only rank 0 runs the main "
                                 "function: call it before or after start_main_thread");
}

bool stats_requested() noexcept { return g_stats; }

}  // namespace detail

runtime::runtime(int* argc, char*** argv, const options& o) {
  if (detail::g_starting.exchange(true))
    throw usage_error(EBUSY, "ito: dist: a distributed runtime already runs in this process");
  std::size_t bytes = 0;
  bool check_races = false;
  std::size_t fault_block_bytes = 4096;
  auto shape = detail::node_shape::host;
  long progress_us = 0, idle_progress_us = 0;
  detail::peer_watch_options watch_options;
  try {
    bytes = detail::resolve_region_bytes(o.region_bytes);
    check_races = detail::resolve_race_check();
    fault_block_bytes = config::number_setting(config::setting_id::dsm_block)
                            .value_or(config::declared(config::setting_id::dsm_block).fallback);
    // The race check compares diffs: asked for, it needs every page to go
    // through the protocol (a node of several ranks shares pages with none).
    shape = static_cast<detail::node_shape>(
        config::choice_setting(config::setting_id::dist_node).value_or(0));
    if (config::boolean_setting(config::setting_id::dsm_check).value_or(false))
      shape = detail::node_shape::rank;
    progress_us = detail::resolve_progress_interval_us();
    idle_progress_us = detail::resolve_idle_progress_interval_us();
    watch_options = detail::resolve_peer_watch_options();
    // The same variable, parsed the same way, as the scheduler's statistics.
    detail::g_stats = config::boolean_setting(config::setting_id::stats).value_or(false);
  } catch (const config_error& e) {
    detail::g_starting.store(false);
    if (!e.from_environment()) throw;
    std::fprintf(stderr, "%s\n", e.what());  // the environment is wrong: every rank stops
    std::exit(2);
  }
  int mpi_up = 0;
  MPI_Initialized(&mpi_up);
  if (!mpi_up) detail::reexec_without_aslr();  // returns only when not needed or not possible
  auto* st = new detail::dist_state;
  st->check_races = check_races;
  st->fault_block_pages = fault_block_bytes / 4096;
  detail::start_mpi(argc, argv, *st);
  detail::reserve_region(bytes, shape, st->region, st->node);
  detail::start_dsm(*st);
  detail::open_doorbells(st->region.node_memfd, st->region.bytes + st->region.globals_bytes,
                         st->node, st->rank);
  detail::start_allocator(*st);
  const detail::host_cpus host = detail::share_host_cpus();
  detail::start_progress(progress_us, idle_progress_us, host);
  detail::start_remote_frees(st->size);
  detail::start_peer_watch(st->rank, st->size, watch_options);
  detail::g_state.store(st, std::memory_order_release);
  MPI_Barrier(MPI_COMM_WORLD);  // every rank is ready before any uses the others
}

runtime::~runtime() {
  detail::dist_state* st = detail::g_state.load(std::memory_order_acquire);
  detail::wait_for_async_fences();  // they use the DSM this tears down
  detail::settle_remote_frees();     // each owner has its blocks back
  detail::stop_peer_watch();  // every rank is here: from now on ranks end normally
  MPI_Barrier(MPI_COMM_WORLD);  // no rank releases what another may still use
  detail::g_state.store(nullptr, std::memory_order_release);
  detail::stop_remote_frees();
  detail::stop_progress();
  detail::close_doorbells();
  detail::stop_allocator();
  detail::stop_dsm(*st);
  detail::release_region(st->region);
  detail::stop_mpi(*st);
  config::set_cpu_share(0);
  delete st;
  detail::g_starting.store(false);
}

int rank() { return detail::require("ito::dist::rank").rank; }
int size() { return detail::require("ito::dist::size").size; }
int node() { return detail::require("ito::dist::node").node.node; }
int nodes() { return detail::require("ito::dist::nodes").node.nodes; }

void barrier() {
  detail::require("ito::dist::barrier");
  detail::refuse_inside_the_scheduler("ito::dist::barrier");
  detail::on_a_large_stack([] {
    detail::sd_fence();
    MPI_Request done;
    MPI_Ibarrier(MPI_COMM_WORLD, &done);
    detail::wait_serving_diffs(  // and applies diffs sent meanwhile
        detail::g_dsm.load(std::memory_order_acquire),
        [](void* request) {
          int finished = 0;
          if (MPI_Test(static_cast<MPI_Request*>(request), &finished, MPI_STATUS_IGNORE) !=
              MPI_SUCCESS)
            detail::mpi_failed("waiting for MPI");
          return finished != 0;
        },
        &done);
    detail::si_fence();
  });
}

void* alloc(std::size_t bytes) { return detail::allocate(bytes); }
void free(void* p) { detail::deallocate(p); }
void* alloc_collective(std::size_t bytes, distribution where) {
  detail::refuse_inside_the_scheduler("ito::dist::alloc_collective");
  void* p = nullptr;
  detail::on_a_large_stack([&] { p = detail::allocate_collective(bytes, where); });
  return p;
}
void sd_fence() {
  detail::on_a_large_stack([] { detail::sd_fence(); });
}
void si_fence() {
  detail::on_a_large_stack([] { detail::si_fence(); });
}
void pin(void* p, std::size_t bytes) {
  detail::on_a_large_stack([=] { detail::pin(p, bytes); });
}
dsm_stats current_dsm_stats() noexcept { return detail::stats(); }
void unpin(void* p, std::size_t bytes) {
  detail::on_a_large_stack([=] { detail::unpin(p, bytes); });
}

region_info region() {
  const detail::dist_state& st = detail::require("ito::dist::region");
  return {st.region.view, st.region.bytes};
}

}  // namespace ito::dist

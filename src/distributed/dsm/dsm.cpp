// SPDX-License-Identifier: Apache-2.0
// The DSM's start and end (dsm.hpp says what it does; each room of it is a
// file of this folder: docs/ARCHITECTURE.md lists them).
#include "distributed/dsm/dsm.hpp"

#include <mpi.h>
#include <signal.h>
#include <sys/mman.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "distributed/dist_state.hpp"
#include "distributed/dsm/diff_mail.hpp"
#include "distributed/dsm/dsm_bookkeeping.hpp"
#include "distributed/dsm/fault.hpp"
#include "distributed/dsm/node_layout.hpp"
#include "distributed/dsm/release.hpp"
#include "distributed/dsm/reserved_array.hpp"
#include "distributed/dsm/statistics.hpp"
#include "distributed/dsm/transport.hpp"
#include "distributed/node_memory.hpp"
#include "distributed/progress.hpp"
#include "ito/error.hpp"

namespace ito::dist::detail {
namespace {

// The progress thread's hook: the running DSM's diffs that arrived.
void serve_running_diffs() {
  if (dsm* d = g_dsm.load(std::memory_order_acquire)) serve_diffs(*d);
}

}  // namespace

std::size_t sharing_bytes_for(std::size_t pages) noexcept {
  return page_rounded(sharing_words_for(pages) * sizeof(std::uint64_t));
}

void start_dsm(dist_state& st) {
  auto* d = new dsm;
  d->view = st.region.view;
  d->alias = st.region.alias;
  d->region_pages = st.region.bytes / page_bytes;
  d->globals = st.region.globals;
  d->pages = d->region_pages + st.region.globals_bytes / page_bytes;
  d->rank = st.rank;
  d->ranks = st.size;
  d->node_alias = st.region.node_alias;
  d->node_fd = st.region.node_memfd;
  d->node = st.node.node;
  d->node_of_rank = st.node.node_of_rank;
  d->ranks_of_node.resize(static_cast<std::size_t>(st.node.nodes));
  for (int r = 0; r < d->ranks; ++r)
    d->ranks_of_node[static_cast<std::size_t>(d->node_of_rank[static_cast<std::size_t>(r)])]
        .push_back(r);
  d->node_homes = st.node.nodes > 1 && st.node.nodes < st.size;
  d->check_races = st.check_races;
  d->fault_block_pages = st.fault_block_pages ? st.fault_block_pages : 1;
  // In the address space reserved after the node alias (iso_region), so
  // that the data window covers them too.
  d->sharing_at = st.region.tail_at;
  d->sharing_words = reinterpret_cast<std::uint64_t*>(d->node_alias + d->sharing_at);
  reserve_bookkeeping(*d);
  if (st.region.tail_bytes < d->sharing_count * sizeof(std::uint64_t) ||
      mmap(d->sharing_words, st.region.tail_bytes, PROT_READ | PROT_WRITE,
           MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0) == MAP_FAILED)
    mapping_failed(*d, "mapping the DSM's sharing words (mmap)");
  if (d->node_homes &&  // the readers masks: the node's, in its memory
      mmap(d->sharing_words, d->readers_words * sizeof(std::uint64_t), PROT_READ | PROT_WRITE,
           MAP_SHARED | MAP_FIXED | MAP_NORESERVE, d->node_fd,
           static_cast<off_t>(readers_offset(d->pages * page_bytes))) == MAP_FAILED)
    mapping_failed(*d, "mapping the node's readers masks (mmap)");
  d->one_copy = st.node.nodes == 1;
  if (d->one_copy) {
    protect_all(*d, PROT_READ | PROT_WRITE);
    g_dsm.store(d, std::memory_order_release);
    return;
  }
  if (!transport::open_windows(d->node_alias,
                               d->sharing_at + d->sharing_count * sizeof(std::uint64_t),
                               d->entries, d->entry_count))
    mpi_failed("creating the DSM's windows");
  start_diff_mail(*d, d->node_alias, st.region.bytes + st.region.globals_bytes,
                  &progress_running);
  // After MPI_Init, which installs a SIGSEGV handler of its own: ours serves
  // the region and hands every other fault to it.
  struct sigaction sa {};
  sa.sa_sigaction = &on_fault;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  g_dsm.store(d, std::memory_order_release);
  set_progress_hook(progress_hook::dsm_diffs, &serve_running_diffs);
  sigaction(SIGSEGV, &sa, &d->previous);
}

void stop_dsm(dist_state&) noexcept {
  dsm* d = g_dsm.load(std::memory_order_acquire);
  if (!d) return;
  if (stats_requested()) print_stats(*d);
  MPI_Barrier(MPI_COMM_WORLD);
  if (!d->one_copy) {
    sigaction(SIGSEGV, &d->previous, nullptr);
    transport::close_windows();
    set_progress_hook(progress_hook::dsm_diffs, nullptr);
    stop_diff_mail(*d);
  }
  g_dsm.store(nullptr, std::memory_order_release);
  release_bookkeeping(*d);
  protect_all(*d, PROT_NONE);  // the sharing words go with the region's alias
  delete d;
}

}  // namespace ito::dist::detail

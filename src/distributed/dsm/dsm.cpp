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
#include "distributed/dsm/directory.hpp"
#include "distributed/dsm/dsm_bookkeeping.hpp"
#include "distributed/dsm/fault.hpp"
#include "distributed/dsm/node_layout.hpp"
#include "distributed/dsm/release.hpp"
#include "distributed/dsm/reserved_array.hpp"
#include "distributed/dsm/statistics.hpp"
#include "distributed/node_memory.hpp"
#include "ito/error.hpp"

namespace ito::dist::detail {

std::atomic<dsm*> g_dsm{nullptr};

dsm& require_dsm(const char* what) {
  dsm* d = g_dsm.load(std::memory_order_acquire);
  if (!d)
    throw usage_error(EPERM, std::string("ito: dsm: ") + what +
                                 " needs a running ito::dist::runtime (create one first, on "
                                 "every rank)");
  return *d;
}

// The pages [first, last] that p..p+bytes covers; usage_error outside the region.
void page_range(dsm& d, const void* p, std::size_t bytes, const char* what, std::size_t* first,
                std::size_t* last) {
  const char* c = static_cast<const char*>(p);
  // Both ends in one area (the region, or the globals), which are contiguous.
  if (bytes == 0 || c + bytes < c || !page_at(d, c, first) || !page_at(d, c + bytes - 1, last) ||
      (*first < d.region_pages) != (*last < d.region_pages))
    throw usage_error(EINVAL, std::string("ito: dsm: ") + what +
                                  ": the range is empty or not inside the DSM region");
}

std::size_t sharing_bytes_for(std::size_t pages) noexcept {
  return page_rounded((readers_words_for(pages) + 2 * page_board::words_for(pages)) *
                          sizeof(std::uint64_t));
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
  d->entry_count = (d->pages + static_cast<std::size_t>(d->ranks) - 1) / static_cast<std::size_t>(d->ranks);
  d->entries = reserve_array<std::int64_t>(d->entry_count);
  d->state.reserve(d->pages);
  d->home_plus1 = reserve_array<std::int32_t>(d->pages);
  d->registered = reserve_array<std::uint8_t>(d->pages);
  d->pins = reserve_array<std::uint32_t>(d->pages);
  d->twins = std::make_unique<twin_frames>(d->pages, kept_twins_max);
  d->modified_list = reserve_array<std::size_t>(d->pages);
  d->written = reserve_array<std::size_t>(d->pages);
  d->written_readers = reserve_array<std::uint64_t>(d->pages);
  d->noticed = reserve_array<std::uint8_t>(d->pages);
  d->noticed_list = reserve_array<std::size_t>(d->pages);
  d->dropped = reserve_array<std::size_t>(d->pages);
  d->range_entries = reserve_array<std::int64_t>(d->pages);
  d->range_words = reserve_array<std::int64_t>(d->pages);
  d->reader_bits = reserve_array<std::uint64_t>(d->pages);
  const std::size_t board_words = page_board::words_for(d->pages);  // each board's
  d->readers_words = readers_words_for(d->pages);
  d->sharing_count = d->readers_words + 2 * board_words;
  // In the address space reserved after the node alias (iso_region), so
  // that the data window covers them too.
  d->sharing_at = static_cast<MPI_Aint>(st.region.tail_at);
  d->sharing_words = reinterpret_cast<std::uint64_t*>(d->node_alias + d->sharing_at);
  if (st.region.tail_bytes < d->sharing_count * sizeof(std::uint64_t) ||
      mmap(d->sharing_words, st.region.tail_bytes, PROT_READ | PROT_WRITE,
           MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0) == MAP_FAILED)
    mapping_failed(*d, "mapping the DSM's sharing words (mmap)");
  if (d->node_homes &&  // the readers masks: the node's, in its memory
      mmap(d->sharing_words, d->readers_words * sizeof(std::uint64_t), PROT_READ | PROT_WRITE,
           MAP_SHARED | MAP_FIXED | MAP_NORESERVE, d->node_fd,
           static_cast<off_t>(readers_offset(d->pages * page_bytes))) == MAP_FAILED)
    mapping_failed(*d, "mapping the node's readers masks (mmap)");
  d->stale = page_board(d->sharing_words, d->readers_words, d->pages);
  d->read_elsewhere = page_board(d->sharing_words, d->readers_words + board_words, d->pages);
  d->targets = target_set(d->ranks);
  // A fault posts from the handler (a mark for each rank of the home's node,
  // for each page it brings in): no allocation there.
  d->posts.reserve(64 + d->fault_block_pages * static_cast<std::size_t>(d->ranks));
  d->one_copy = st.node.nodes == 1;
  if (d->one_copy) {
    protect_all(*d, PROT_READ | PROT_WRITE);
    g_dsm.store(d, std::memory_order_release);
    return;
  }
  if (MPI_Win_create(d->node_alias,
                     d->sharing_at + static_cast<MPI_Aint>(d->sharing_count * sizeof(std::uint64_t)),
                     1, MPI_INFO_NULL, MPI_COMM_WORLD, &d->data) != MPI_SUCCESS ||
      MPI_Win_create(d->entries, static_cast<MPI_Aint>(d->entry_count * sizeof(std::int64_t)),
                     sizeof(std::int64_t), MPI_INFO_NULL, MPI_COMM_WORLD,
                     &d->directory) != MPI_SUCCESS ||
      MPI_Win_lock_all(MPI_MODE_NOCHECK, d->data) != MPI_SUCCESS ||
      MPI_Win_lock_all(MPI_MODE_NOCHECK, d->directory) != MPI_SUCCESS)
    mpi_failed("creating the DSM's windows");
  decide_own_directory_cas();
  start_diff_mail(d->node_alias, st.region.bytes + st.region.globals_bytes, d->ranks);
  // After MPI_Init, which installs a SIGSEGV handler of its own: ours serves
  // the region and hands every other fault to it.
  struct sigaction sa {};
  sa.sa_sigaction = &on_fault;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  g_dsm.store(d, std::memory_order_release);
  sigaction(SIGSEGV, &sa, &d->previous);
}

void stop_dsm(dist_state&) noexcept {
  dsm* d = g_dsm.load(std::memory_order_acquire);
  if (!d) return;
  if (stats_requested()) print_stats(*d);
  MPI_Barrier(MPI_COMM_WORLD);
  if (!d->one_copy) {
    sigaction(SIGSEGV, &d->previous, nullptr);
    MPI_Win_unlock_all(d->data);
    MPI_Win_unlock_all(d->directory);
    MPI_Win_free(&d->data);
    MPI_Win_free(&d->directory);
    stop_diff_mail();
  }
  g_dsm.store(nullptr, std::memory_order_release);
  release_array(d->entries, d->entry_count);
  d->state.release(d->pages);
  release_array(d->home_plus1, d->pages);
  release_array(d->registered, d->pages);
  release_array(d->pins, d->pages);
  release_array(d->modified_list, d->pages);
  release_array(d->written, d->pages);
  release_array(d->written_readers, d->pages);
  release_array(d->noticed, d->pages);
  release_array(d->dropped, d->pages);
  release_array(d->range_entries, d->pages);
  release_array(d->range_words, d->pages);
  release_array(d->reader_bits, d->pages);
  release_array(d->noticed_list, d->pages);
  d->stale.release();
  d->read_elsewhere.release();
  protect_all(*d, PROT_NONE);  // the sharing words go with the region's alias
  delete d;
}

void mpi_failed(const char* what) {
  std::fprintf(stderr, "ito: dsm: %s failed\n", what);
  std::abort();
}

}  // namespace ito::dist::detail

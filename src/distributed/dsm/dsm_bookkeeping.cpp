// SPDX-License-Identifier: Apache-2.0
// A DSM's bookkeeping made and given back from its sizes alone (no MPI, no
// runtime: start_dsm and the in-process tests make theirs so), and the
// running DSM the entry points find (g_dsm).
#include "distributed/dsm/dsm_bookkeeping.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <type_traits>

#include "distributed/dsm/node_layout.hpp"
#include "distributed/dsm/release.hpp"
#include "distributed/dsm/reserved_array.hpp"
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

std::size_t sharing_words_for(std::size_t pages) noexcept {
  return readers_words_for(pages) + 2 * page_board::words_for(pages);
}

namespace {

// Every array of one element per page, once: reserve_bookkeeping and
// release_bookkeeping both walk this list, so neither can miss one.
template <class Each>
void each_page_array(dsm& d, Each&& each) {
  each(d.home_plus1);
  each(d.registered);
  each(d.pins);
  each(d.modified_list);
  each(d.written);
  each(d.written_readers);
  each(d.noticed);
  each(d.noticed_list);
  each(d.dropped);
  each(d.range_entries);
  each(d.range_words);
  each(d.reader_bits);
}

}  // namespace

void reserve_bookkeeping(dsm& d) {
  d.entry_count = (d.pages + static_cast<std::size_t>(d.ranks) - 1) / static_cast<std::size_t>(d.ranks);
  d.entries = reserve_array<std::int64_t>(d.entry_count);
  d.state.reserve(d.pages);
  each_page_array(d, [&](auto*& array) {
    array = reserve_array<std::remove_pointer_t<std::remove_reference_t<decltype(array)>>>(d.pages);
  });
  d.twins = std::make_unique<twin_frames>(d.pages, kept_twins_max);
  const std::size_t board_words = page_board::words_for(d.pages);  // each board's
  d.readers_words = readers_words_for(d.pages);
  d.sharing_count = sharing_words_for(d.pages);
  d.stale = page_board(d.sharing_words, d.readers_words, d.pages);
  d.read_elsewhere = page_board(d.sharing_words, d.readers_words + board_words, d.pages);
  d.targets = target_set(d.ranks);
  // A fault posts from the handler (a mark for each rank of the home's node,
  // for each page it brings in): no allocation there.
  d.posts.reserve(64 + d.fault_block_pages * static_cast<std::size_t>(d.ranks));
}

void release_bookkeeping(dsm& d) noexcept {
  release_array(d.entries, d.entry_count);
  d.state.release(d.pages);
  each_page_array(d, [&](auto*& array) { release_array(array, d.pages); });
  d.stale.release();
  d.read_elsewhere.release();
  d.twins.reset();
}

void mpi_failed(const char* what) {
  std::fprintf(stderr, "ito: dsm: %s failed\n", what);
  std::abort();
}

}  // namespace ito::dist::detail

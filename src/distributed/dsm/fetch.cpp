// SPDX-License-Identifier: Apache-2.0
#include "distributed/dsm/fetch.hpp"

#include <sys/mman.h>

#include <algorithm>

#include "distributed/dsm/directory.hpp"
#include "distributed/dsm/dsm.hpp"
#include "distributed/dsm/node_layout.hpp"
#include "distributed/dsm/transport.hpp"

namespace ito::dist::detail {

void fetch(dsm& d, std::size_t page, int from) {
  if (!transport::get(from, page * page_bytes, d.alias + page * page_bytes, page_bytes) ||
      !transport::flush(transport::window::data, from))
    mpi_failed("fetching a page from its home");
}

namespace {

// Joins this rank to the readers of `count` pages from `first`, all homed on
// `h`: their readers masks are consecutive words there, so one accumulate
// (`bits`: count copies of this rank's bit); the read-elsewhere marks are
// posted, and go with the caller's posts.send, which flushes both.
void join_readers(dsm& d, std::size_t first, std::size_t count, int h, const std::uint64_t* bits) {
  if (!transport::or_words(h, sharing_disp(d, first), bits, count))
    mpi_failed("registering a reader at the home");
  for (std::size_t page = first; page < first + count; ++page) {
    d.registered[page] = 1;
    d.stale.watch(page);
    for (const int r : d.ranks_of_node[static_cast<std::size_t>(d.node_of_rank[h])])
      d.posts.post(r, d.read_elsewhere, page);
  }
}

// Before this rank's first fetch of `page`: it becomes one of the page's
// readers at the home, which is told so on its read_elsewhere board. Both
// complete before the fetch: a writer that reads the readers after its diff
// landed either sees this rank (and notifies it) or was read before this
// rank's fetch, which then sees the diff (docs/DISTRIBUTED.md, write notices).
void register_reader(dsm& d, std::size_t page, int h) {
  if (d.registered[page]) return;
  const std::uint64_t bit = reader_bit(d.rank);
  join_readers(d, page, 1, h, &bit);
  d.posts.send(d.sharing_at);
}

// Calls each(first, count) for every run of consecutive pages in [first,
// last] for which in(page) holds and that one rank homes, at most
// most_pages long.
template <class In, class Each>
void for_each_run(dsm& d, std::size_t first, std::size_t last, std::size_t most_pages, In&& in,
                  Each&& each) {
  std::size_t start = first, count = 0;
  for (std::size_t page = first; page <= last + 1; ++page) {
    const bool extends = page <= last && in(page) && count != 0 && count < most_pages &&
                         home_of(d, page) == home_of(d, start);
    if (extends) {
      ++count;
      continue;
    }
    if (count) each(start, count);
    start = page;
    count = page <= last && in(page) ? 1 : 0;
  }
}

}  // namespace

// A fetch that makes this rank one of the page's readers first
// (register_reader's order), in one round trip where the home's node is the
// home alone: the readers bit and the read-elsewhere mark are accumulates to
// the home in the data window, and the page comes by a read_words after
// them, which the transport orders after them (to one target, one window).
// Where the home's node has other ranks, their marks go to other targets and
// complete first.
void fetch_as_reader(dsm& d, std::size_t page, int h) {
  const auto& home_node = d.ranks_of_node[static_cast<std::size_t>(d.node_of_rank[static_cast<std::size_t>(h)])];
  if (d.registered[page] || home_node.size() != 1) {
    register_reader(d, page, h);
    return fetch(d, page, h);
  }
  const std::uint64_t bit = reader_bit(d.rank);
  join_readers(d, page, 1, h, &bit);
  d.posts.issue(d.sharing_at);
  constexpr std::size_t words = page_bytes / sizeof(std::uint64_t);
  auto* into = reinterpret_cast<std::uint64_t*>(d.alias + page * page_bytes);
  if (!transport::read_words(h, page * page_bytes, into, words) ||
      !transport::flush(transport::window::data, h))
    mpi_failed("fetching a page from its home");
  d.posts.completed();
}

// The home's copy of `page` into d.master.
void fetch_master(dsm& d, std::size_t page) {
  const int h = home_of(d, page);
  if (!transport::get(h, page * page_bytes, d.master, page_bytes) ||
      !transport::flush(transport::window::data, h))
    mpi_failed("fetching a page from its home");
}

// A checkout's pages that this rank neither holds nor is home of: it joins
// their readers at their homes, one accumulate per run of pages (the readers
// masks of consecutive pages are consecutive words) and the read-elsewhere
// marks one per 64 pages, all completed by one flush; then they are fetched
// with one transfer per run, completed by one flush, and mapped with one
// mprotect per run. Pages the checkout overwrites whole are not fetched and
// take no twin: marked d.overwrite, all of each goes out at the next release.
void bring_in(dsm& d, const char* begin, const char* end, std::size_t first, std::size_t last,
              bool overwrite) {
  constexpr std::size_t most_pages = (std::size_t{1} << 30) / page_bytes;  // MPI counts are ints
  learn_homes(d, first, last);
  auto away = [&](std::size_t page) {
    return d.state.of(page) == invalid && !on_this_node(d, home_of(d, page));
  };
  auto unregistered = [&](std::size_t page) { return away(page) && !d.registered[page]; };
  for_each_run(d, first, last, most_pages, unregistered, [&](std::size_t start, std::size_t n) {
    for (; d.reader_bits_filled < n; ++d.reader_bits_filled)
      d.reader_bits[d.reader_bits_filled] = reader_bit(d.rank);
    join_readers(d, start, n, home_of(d, start), d.reader_bits);
  });
  d.posts.send(d.sharing_at);
  auto whole = [&](std::size_t page) {
    const char* at = view_of(d, page);
    return at >= begin && at + page_bytes <= end;
  };
  auto fetched = [&](std::size_t page) { return away(page) && !(overwrite && whole(page)); };
  for_each_run(d, first, last, most_pages, fetched, [&](std::size_t start, std::size_t n) {
    if (!transport::get(home_of(d, start), start * page_bytes, d.alias + start * page_bytes,
                        n * page_bytes))
      mpi_failed("fetching a checkout's pages from their home");
    ++d.stats.fetch_transfers;
    d.targets.add(home_of(d, start));
  });
  if (!d.targets.flush(transport::window::data)) mpi_failed("fetching a checkout's pages");
  for_each_run(d, first, last, most_pages, fetched, [&](std::size_t start, std::size_t n) {
    protect(d, start, PROT_READ, n);
    for (std::size_t page = start; page < start + n; ++page) d.state.fetched(page);
    d.stats.fetches += n;
  });
  if (!overwrite) return;
  writable_runs batch(d);
  for (std::size_t page = first; page <= last; ++page) {
    if (!away(page) || !whole(page)) continue;
    batch.add(page);
    d.state.overwritten_whole(page);
    d.modified_list[d.modified_count++] = page;
  }
  batch.flush();
}

// ITO_DSM_BLOCK: a fault brings in the aligned block of fault_block_pages
// around its page (within its area, the region or the globals), as a
// checkout of the block would: its pages this rank neither holds nor homes
// join their homes' readers and come in with one transfer per run homed on
// one rank. A sequential loop then faults once per block, not per page.
// Only the neighbours whose homes this rank knows already (placed arrays,
// pages it looked up): asking the directory would make this rank the home of
// pages nobody has touched, some not even allocated yet, which a collective
// array placed there later assumes have none.
void bring_in_block(dsm& d, std::size_t page) {
  const std::size_t area_first = page < d.region_pages ? 0 : d.region_pages;
  const std::size_t area_end = page < d.region_pages ? d.region_pages : d.pages;
  const std::size_t block_first =
      std::max(area_first, page - (page - area_first) % d.fault_block_pages);
  const std::size_t block_last = std::min(area_end, block_first + d.fault_block_pages) - 1;
  home_of(d, page);  // the faulting page's own, asked if need be
  std::size_t first = page, last = page;
  while (first > block_first && d.home_plus1[first - 1] != 0) --first;
  while (last < block_last && d.home_plus1[last + 1] != 0) ++last;
  bring_in(d, nullptr, nullptr, first, last, false);
}

}  // namespace ito::dist::detail

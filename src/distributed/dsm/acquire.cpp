// SPDX-License-Identifier: Apache-2.0
#include "distributed/dsm/acquire.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "distributed/dsm/directory.hpp"
#include "distributed/dsm/fetch.hpp"
#include "distributed/dsm/node_layout.hpp"

namespace ito::dist::detail {
namespace {

// A page this rank is writing that another rank wrote and released: the
// home's bytes replace this copy's, except where this rank changed it since
// its twin (a data-race-free program's other writer did not touch those),
// and the master becomes the twin, so this rank's bytes still go out at its
// next release. Read-only meanwhile: a store from another thread waits.
void merge_master(dsm& d, std::size_t page) {
  protect(d, page, PROT_READ);
  fetch_master(d, page);
  char* now = d.alias + page * page_bytes;
  char* twin = d.twins->of(page);
  for (std::size_t k = 0; k < page_bytes; ++k)
    if (now[k] == twin[k]) now[k] = d.master[k];
  std::memcpy(twin, d.master, page_bytes);
  protect(d, page, PROT_READ | PROT_WRITE);
  ++d.stats.fetches;
}

// The same merge for a pinned page, in place: its access stays read-write
// (a pinned page must never fault, so it cannot be made read-only while it
// is merged). Only the bytes that the master changed since the twin are
// written, one by one, and only where this rank has not changed them: in a
// data-race-free program no thread of this rank writes such a byte during
// this acquire (it would race with the rank that released it), so a store
// from another thread meanwhile, to any other byte, is kept. A pinned copy
// this rank has not written since its twin (every pinned page has one) is
// thus refreshed in place.
void merge_pinned(dsm& d, std::size_t page) {
  fetch_master(d, page);
  char* now = d.alias + page * page_bytes;
  char* twin = d.twins->of(page);
  for (std::size_t i = 0; i < page_bytes; i += 8) {
    std::uint64_t m, t;
    std::memcpy(&m, d.master + i, 8);
    std::memcpy(&t, twin + i, 8);
    if (m == t) continue;  // nobody else changed these bytes
    for (std::size_t k = i; k < i + 8; ++k)
      if (d.master[k] != twin[k] && __atomic_load_n(&now[k], __ATOMIC_RELAXED) == twin[k])
        __atomic_store_n(&now[k], d.master[k], __ATOMIC_RELAXED);
  }
  std::memcpy(twin, d.master, page_bytes);
  ++d.stats.fetches;
}

// An acquire: drops the shared copies of pages that others wrote and
// released (their write notices), and merges the master into the pages this
// rank is writing, pinned ones in place.
void act_on_notice(dsm& d, std::size_t page) {
  // Overwritten whole: all of it goes out at the next release, nothing to merge.
  if (d.state.overwritten(page)) return;
  switch (d.state.of(page)) {
    case shared:
      if (d.pins[page]) {  // checked out to read: refreshed in place, never faulting
        fetch(d, page, home_of(d, page));
        ++d.stats.fetches;
      } else {
        protect(d, page, PROT_NONE);
        d.state.dropped(page);
      }
      ++d.stats.invalidations;
      break;
    case modified:
      merge_master(d, page);
      ++d.stats.invalidations;
      break;
    case pinned:  // must not fault: merged without changing its access
      merge_pinned(d, page);
      ++d.stats.invalidations;
      break;
    default:
      break;
  }
}

}  // namespace

// A notice for a shared copy nobody pinned: dropped, but in a batch
// (drop_copies), one mprotect per run of neighbours. Any other: acted on now.
void take_notice(dsm& d, std::size_t page, std::size_t* to_drop) {
  if (d.state.of(page) == shared && !d.pins[page] && !d.state.overwritten(page))
    d.dropped[(*to_drop)++] = page;
  else
    act_on_notice(d, page);
}

void drop_copies(dsm& d, std::size_t n) {
  std::sort(d.dropped, d.dropped + n);
  for_each_listed_run(d, d.dropped, n, 0, [](std::size_t) { return 1; },
                      [&](std::size_t first, std::size_t count, int) {
                        protect(d, first, PROT_NONE, count);
                        for (std::size_t page = first; page < first + count; ++page)
                          d.state.dropped(page);
                      });
  d.stats.invalidations += n;
}

void take_write_notices(dsm& d) {
  std::size_t to_drop = 0;
  d.stale.take([&](std::size_t page) { take_notice(d, page, &to_drop); });
  drop_copies(d, to_drop);
}

}  // namespace ito::dist::detail

// SPDX-License-Identifier: Apache-2.0
// Pins and checkouts: a pinned page stays accessible, never faulting, until
// its last pin goes; a checkout brings its range in (fetch.hpp) and pins it
// (to read: a copy refreshed in place at acquires; to write: modified, or
// overwritten whole). Pins are counted per page (d.pins), whichever ranges
// they came from.
#include <sys/mman.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>

#include "distributed/dsm/diffs.hpp"
#include "distributed/dsm/directory.hpp"
#include "distributed/dsm/dsm.hpp"
#include "distributed/dsm/fault.hpp"
#include "distributed/dsm/fetch.hpp"
#include "distributed/dsm/node_layout.hpp"
#include "distributed/dsm/release.hpp"
#include "ito/error.hpp"

namespace ito::dist::detail {
namespace {

// One more pin of a page this rank holds (or is home of): it stays
// accessible, never faulting, until its last pin goes.
// (batch: its access changes with its neighbours', at batch->flush().)
void pin_page(dsm& d, std::size_t page, writable_runs* batch = nullptr) {
  switch (d.state.of(page)) {
    case shared: make_modified(d, page, pinned, batch); break;
    case modified: d.state.pinned_copy(page); break;
    case home_watched:
    case home_read:
    case home:  // hot: a reader that arrives later does not make it fault
      take_twin(d, page);
      if (d.state.of(page) != home) make_writable(d, page, batch);
      else note_written(d, page);  // unwatched until now: its past writes are unknown
      d.state.heated(page);
      d.modified_list[d.modified_count++] = page;
      break;
    default: break;
  }
}

// The notices pin_page posted for this home's unwatched pages go at the end
// of the pin or checkout, each completed at its reader: a fetch after them
// (fetch_as_reader) would issue every posted mark but complete only its own
// home's, leaving these in flight while their buffer is reused (found by
// dsm_schedules_test: 4 of 1,000 seeds).
void send_pin_notices(dsm& d) { d.stats.notices_sent += d.posts.send(d.sharing_at); }

void count_pins(dsm& d, std::size_t first, std::size_t last, const char* what) {
  for (std::size_t page = first; page <= last; ++page)
    if (d.pins[page] == UINT32_MAX)
      throw usage_error(EINVAL, std::string("ito: dsm: ") + what +
                                    ": a page pinned 2^32 - 1 times without unpin");
  for (std::size_t page = first; page <= last; ++page) ++d.pins[page];
}

// With d.lock held: pins the range's pages, bringing in those this rank
// neither holds nor homes (unless `held_only`: then, where there is one,
// nothing is done and the answer is false).
bool check_out_locked(dsm& d, void* p, std::size_t bytes, access how, bool held_only) {
  std::size_t first = 0, last = 0;
  page_range(d, p, bytes, "checkout", &first, &last);
  if (held_only && !d.one_copy) {
    for (std::size_t page = first; page <= last; ++page)
      if (d.state.of(page) == invalid && !on_this_node(d, home_of(d, page))) return false;
  }
  count_pins(d, first, last, "checkout");
  if (d.one_copy) return true;
  const char* begin = static_cast<const char*>(p);
  if (!held_only) bring_in(d, begin, begin + bytes, first, last, how == access::write);
  writable_runs batch(d), read_only(d, PROT_READ);
  for (std::size_t page = first; page <= last; ++page) {
    // Every page is held or homed here now; this node's untouched pages
    // become read-write, or read-only to read another rank's (what
    // serve_fault does for them).
    const int h = d.state.of(page) == invalid ? home_of(d, page) : -1;
    if (h >= 0 && on_this_node(d, h)) {
      const bool read = how == access::read && h != d.rank;
      if (read) d.state.touched_read(page);
      else d.state.touched_home(page);
      (read ? read_only : batch).add(page);
    }
    // To read, a copy stays read-only and is refreshed in place at acquires
    // while pinned (act_on_notice); a home's page is the master already.
    if (how != access::read) pin_page(d, page, &batch);
  }
  batch.flush();
  read_only.flush();
  send_pin_notices(d);
  return true;
}

}  // namespace

// Pins are counted per page: a page stays pinned until each pin of it is
// undone, whichever ranges they came from.
void pin(void* p, std::size_t bytes) {
  dsm& d = require_dsm("pin");
  std::size_t first = 0, last = 0;
  page_range(d, p, bytes, "pin", &first, &last);
  std::lock_guard hold(d.lock);
  count_pins(d, first, last, "pin");
  if (d.one_copy) return;  // read-write for good already
  // Every page fetched (or ours, if we are its home) before any is pinned:
  // a fetch must find no notice of a pin posted (send_pin_notices).
  for (std::size_t page = first; page <= last; ++page) serve_fault(d, page, false);
  for (std::size_t page = first; page <= last; ++page) pin_page(d, page);
  send_pin_notices(d);
}

// Undoes one pin of each page the range covers; a page whose last pin goes
// is Modified (its pending writes go at the next release), or stays hot on
// its home. A page in the range that this rank has not pinned is a usage
// error, and then nothing is unpinned: an unmatched unpin would otherwise
// unpin a page that another pin still needs.
void unpin(void* p, std::size_t bytes) {
  dsm& d = require_dsm("unpin");
  std::size_t first = 0, last = 0;
  page_range(d, p, bytes, "unpin", &first, &last);
  std::lock_guard hold(d.lock);
  for (std::size_t page = first; page <= last; ++page) {
    if (d.pins[page] != 0) continue;
    char what[256];
    std::snprintf(what, sizeof what,
                  "ito: dsm: unpin: the page at %p is not pinned on this rank (each unpin must "
                  "undo a pin of every page it covers); nothing was unpinned",
                  static_cast<void*>(view_of(d, page)));
    throw usage_error(EINVAL, what);
  }
  for (std::size_t page = first; page <= last; ++page)
    if (--d.pins[page] == 0 && d.state.of(page) == pinned) d.state.unpinned(page);
}

void check_out_pages(void* p, std::size_t bytes, access how) {
  dsm& d = require_dsm("checkout");
  std::lock_guard hold(d.lock);
  check_out_locked(d, p, bytes, how, false);
}

bool check_out_held_pages(void* p, std::size_t bytes, access how) {
  dsm& d = require_dsm("checkout");
  std::lock_guard hold(d.lock);
  return check_out_locked(d, p, bytes, how, true);
}

}  // namespace ito::dist::detail

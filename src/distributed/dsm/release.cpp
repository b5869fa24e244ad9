// SPDX-License-Identifier: Apache-2.0
#include "distributed/dsm/release.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "distributed/dsm/diff_mail.hpp"
#include "distributed/dsm/diffs.hpp"
#include "distributed/dsm/directory.hpp"
#include "distributed/dsm/dsm.hpp"
#include "distributed/dsm/node_layout.hpp"
#include "distributed/dsm/transport.hpp"

namespace ito::dist::detail {
namespace {

// Whether a hot page of this home changed since its twin was taken; the
// twin becomes what was compared, word by word, so that a store from
// another thread meanwhile differs from it at the next release.
bool hot_page_changed(dsm& d, std::size_t page) {
  auto* now = reinterpret_cast<std::uint64_t*>(copy_of(d, page));
  auto* twin = reinterpret_cast<std::uint64_t*>(d.twins->of(page));
  bool changed = false;
  for (std::size_t i = 0; i < page_bytes / 8; ++i) {
    const std::uint64_t w = __atomic_load_n(&now[i], __ATOMIC_RELAXED);
    if (w != twin[i]) {
      changed = true;
      twin[i] = w;
    }
  }
  return changed;
}

// Write notices for `page` to its readers other than this rank.
void post_notices(dsm& d, std::size_t page, std::uint64_t readers) {
  for (; readers; readers &= readers - 1)
    for (int r = __builtin_ctzll(readers); r < d.ranks; r += 64)
      if (r != d.rank) d.posts.post(r, d.stale, page);
}

}  // namespace

// A page this rank wrote: notices go to its other readers. For this home's
// own pages at once (its writes are in place: nothing to wait for); for
// others once the diff is complete at the home (complete_release), so that
// a notice never arrives before the data. With two ranks the only reader of
// a page away from its home is this rank itself: nothing to send.
void note_written(dsm& d, std::size_t page) {
  if (on_this_node(d, home_of(d, page)))
    post_notices(d, page, __atomic_load_n(&d.sharing_words[page], __ATOMIC_ACQUIRE));
  else if (d.ranks > 2)
    d.written[d.written_count++] = page;
}

namespace {

// After the diffs (each complete at its home already: delivered, or
// complete_diff), reads the readers of the pages they went to, and sends
// every notice: one more round trip where another home's pages were written
// at more than two ranks, else none.
void complete_release(dsm& d) {
  if (d.written_count != 0) {
    for (std::size_t k = 0; k < d.written_count; ++k) {
      const std::size_t page = d.written[k];
      if (!transport::get(home_of(d, page), sharing_disp(d, page), &d.written_readers[k],
                          sizeof(std::uint64_t)))
        mpi_failed("reading a page's readers");
      d.targets.add(home_of(d, page));
    }
    if (!d.targets.flush(transport::window::data))
      mpi_failed("reading the readers of written pages");
    for (std::size_t k = 0; k < d.written_count; ++k)
      post_notices(d, d.written[k], d.written_readers[k]);
    d.written_count = 0;
  }
  d.stats.notices_sent += d.posts.send(d.sharing_at);
}

}  // namespace

// A release: sends the diffs of this rank's modified and pinned pages to
// their homes, then write notices to the readers of every page this rank
// wrote, its own pages included. Modified pages become shared, or invalid
// where `d.noticed` says another rank wrote them too (release_and_invalidate).
void release(dsm& d) {
  // Pages of this home that another rank began to read: from now on a write
  // here must fault to be known; what this rank wrote since the last
  // release, unknown, is notified as written.
  d.read_elsewhere.take([&](std::size_t page) {
    // Not touched here yet (its board word is scanned for a neighbour's
    // sake): the mark waits for the release after this rank's first touch,
    // which would otherwise make it home, unwatched, with its readers
    // registered already and never told of this rank's stores (issue 45).
    if (d.state.of(page) == invalid) return d.read_elsewhere.keep(page);
    if (d.state.of(page) == home_read) {  // read-only already, and not written here
      d.state.watched(page);
      return;
    }
    if (d.state.of(page) != home) return;  // watched already, or listed below
    protect(d, page, PROT_READ);
    d.state.watched(page);
    note_written(d, page);
  });
  std::size_t* const list = d.modified_list;
  const std::size_t count = d.modified_count;
  // Diffs of more than a page or two go by message, one per home
  // (diff_mail.hpp). A release of one or two pages puts each page whose
  // diff is one run of bytes: MPI serves a put at the home's next MPI call
  // of any kind (a home waiting in a collective serves it at once), where a
  // message waits for the home's progress thread or its own waits. A diff
  // of several runs goes by message anyway: MPICH is slow with a put of an
  // indexed type (a page with 64 runs: sd_fence 44-60 us, 23-37 by message).
  constexpr std::size_t most_put_pages = 2;
  std::size_t away = 0;
  for (std::size_t k = 0; k < count && away <= most_put_pages; ++k)
    away += d.state.of(list[k]) == modified || d.state.of(list[k]) == pinned;
  d.mail_open = diff_mail_open(d);
  d.mail = d.mail_open && away > most_put_pages;
  // Modified pages go read-only (or no access) before their diffs, one
  // mprotect per run of neighbours: a store from another thread of this rank
  // meanwhile faults, waits for the lock, and takes a fresh twin (or fetches
  // the master) after.
  // So do the hot pages that look unchanged since the last release: they
  // cool (watched again), compared once more below now that no store can
  // land unseen.
  std::sort(list, list + count);
  for (std::size_t k = 0; k < count; ++k) {
    const std::size_t page = list[k];
    if (d.state.of(page) == home_hot && !d.pins[page] &&
        std::memcmp(copy_of(d, page), d.twins->of(page), page_bytes) == 0)
      d.state.cooled(page);
  }
  auto new_access = [&](std::size_t page) {
    if (d.state.of(page) == home_watched) return PROT_READ;
    return d.state.of(page) != modified ? -1 : d.noticed[page] ? PROT_NONE : PROT_READ;
  };
  for_each_listed_run(d, list, count, -1, new_access, [&](std::size_t first, std::size_t n, int prot) {
    protect(d, first, prot, n);
  });
  for (std::size_t k = 0; k < count; ++k) {
    const std::size_t page = list[k];
    switch (d.state.of(page)) {
      case home_hot:
      case home_watched:  // cooling: read-only now, its twin given back below
        if (hot_page_changed(d, page)) note_written(d, page);
        break;
      case pinned:  // writable throughout: its twin becomes what was sent
        if (send_diff(d, page, true)) note_written(d, page);
        d.state.released_pinned(page);
        break;
      default:  // modified
        if (send_diff(d, page, false)) note_written(d, page);
        d.state.released_modified(page, d.noticed[page] != 0);
    }
  }
  // The hot and pinned pages stay listed; the others' twins are released
  // (after their diffs, which read them).
  auto released = [&](std::size_t page) {
    return d.state.of(page) == home_hot || d.state.of(page) == pinned ? 0 : 1;
  };
  if (d.mail_open) d.stats.diff_transfers += deliver_diffs(d);  // complete at their homes
  d.twins->give_back(list, count, released);
  d.stats.twin_pages_kept = d.twins->kept();
  std::size_t kept = 0;
  for (std::size_t k = 0; k < count; ++k)
    if (!released(list[k])) list[kept++] = list[k];
  d.modified_count = kept;
  complete_release(d);
}

}  // namespace ito::dist::detail

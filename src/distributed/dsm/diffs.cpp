// SPDX-License-Identifier: Apache-2.0
#include "distributed/dsm/diffs.hpp"

#include "distributed/dsm/diff_mail.hpp"
#include "distributed/dsm/directory.hpp"
#include "distributed/dsm/dsm.hpp"
#include "distributed/dsm/race_check.hpp"
#include "distributed/dsm/transport.hpp"

namespace ito::dist::detail {
namespace {

// Without diff mail (a one-run diff in a release of one or two pages, or no
// progress thread), each diff is a put, complete at its home before the next
// one is issued: a round trip per page. (Completing a release's puts with one
// MPI_Win_flush_all, as at first, lost writes over UCX's shared-memory
// transports: target_flush.hpp.)
bool complete_diff(int home) {
  if (!transport::flush(transport::window::data, home)) mpi_failed("completing a diff");
  return true;
}

// The runs of bytes where `now` differs from `twin`, into d.run_at and
// d.run_length; returns how many.
int differing_runs(dsm& d, const char* now, const char* twin) {
  int runs = 0;
  std::size_t run = page_bytes;  // start of the open run of differing bytes, if any
  auto close_run = [&](std::size_t end) {
    d.run_at[runs] = static_cast<int>(run);
    d.run_length[runs++] = static_cast<int>(end - run);
    run = page_bytes;
  };
  for (std::size_t i = 0; i < page_bytes; i += 8) {
    std::uint64_t a, b;
    std::memcpy(&a, now + i, 8);
    std::memcpy(&b, twin + i, 8);
    if (a == b) {
      if (run != page_bytes) close_run(i);
      continue;
    }
    for (std::size_t k = i; k < i + 8; ++k) {
      if (now[k] != twin[k]) {
        if (run == page_bytes) run = k;
      } else if (run != page_bytes) {
        close_run(k);
      }
    }
  }
  if (run != page_bytes) close_run(page_bytes);
  return runs;
}

int whole_page_run(dsm& d) {
  d.run_at[0] = 0;
  d.run_length[0] = static_cast<int>(page_bytes);
  return 1;
}

}  // namespace

// Sends page's changes against its twin to its home: exactly the bytes that
// differ (a word-wide run would carry stale neighbours over bytes another
// rank wrote), skipping equal words a word at a time. False if nothing changed.
//
// A pinned page (`keep_twin`) stays writable meanwhile, so other threads may
// store into it while it is compared. It is compared as one snapshot, which
// becomes its twin and is what goes out (the put reads the twin, untouched
// until the release completes): the home then holds exactly the twin's bytes
// wherever this rank wrote, and a store that came after the snapshot differs
// from the twin and goes at the next release. (A twin taken again after the
// diff, as before, could hold a store the diff missed: never sent, and undone
// by the next merge, which would take it for the master's old byte.)
//
// A page a write checkout overwrites whole (d.state.overwritten) goes out whole: its
// twin says nothing, since the new bytes may equal anything it could hold.
bool send_diff(dsm& d, std::size_t page, bool keep_twin) {
  const char* now = d.alias + page * page_bytes;
  // A pinned page keeps a twin from here on; one a write checkout overwrote
  // whole has none yet (its diff is the whole page, whatever a twin holds).
  char* twin = keep_twin ? d.twins->take(page) : d.twins->of(page);
  if (keep_twin) {
    const auto* words = reinterpret_cast<const std::uint64_t*>(now);
    for (std::size_t i = 0; i < page_bytes / 8; ++i) {
      const std::uint64_t w = __atomic_load_n(&words[i], __ATOMIC_RELAXED);
      std::memcpy(d.snapshot + i * 8, &w, 8);
    }
    now = d.snapshot;
  }
  const bool whole = d.state.overwritten(page);
  const int runs = whole ? whole_page_run(d) : differing_runs(d, now, twin);
  if (runs == 0) return false;
  ++d.stats.diffs_sent;
  const int h = home_of(d, page);
  const std::size_t at = page * page_bytes;
  if (d.check_races && !whole) {
    if (!transport::get(h, at, d.master, page_bytes) ||
        !transport::flush(transport::window::data, h))
      mpi_failed("reading a page back from its home");
    report_races(d.rank, h, view_of(d, page), now, twin, d.master, page_bytes);
  }
  if (keep_twin) {
    std::memcpy(twin, d.snapshot, page_bytes);
    now = twin;
  }
  if (d.mail || (d.mail_open && runs > 1)) {  // with the release's others for this home
    for (int k = 0; k < runs; ++k)
      queue_diff(d, h, page * page_bytes + static_cast<std::size_t>(d.run_at[k]), now + d.run_at[k],
                 static_cast<std::size_t>(d.run_length[k]));
    return true;
  }
  ++d.stats.diff_transfers;
  // One transfer per page, whatever its runs (transport_mpi.cpp says why).
  if (!transport::put_runs(h, at, now, d.run_at, d.run_length, runs))
    mpi_failed("sending a diff to its home");
  return complete_diff(h);
}

}  // namespace ito::dist::detail

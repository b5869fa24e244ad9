// SPDX-License-Identifier: Apache-2.0
#include "distributed/dsm/directory.hpp"

#include <mpi.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <mutex>

#include "common/setting_values.hpp"
#include "distributed/dsm/dsm.hpp"
#include "distributed/dsm/node_layout.hpp"

namespace ito::dist::detail {

namespace {
bool g_own_cas_in_memory = false;  // decide_own_directory_cas's answer
}  // namespace

// Open MPI 4.1.0-4.1.4's osc/rdma sends an MPI_Compare_and_swap aimed at the
// caller's own rank to its BTL with the endpoint it has for itself, which
// btl/vader (shared memory) does not have: a null pointer, a SIGSEGV in
// mca_btl_vader_send (15 lines of plain MPI do it; 4.1.5 fixed it upstream
// by doing CASes between ranks of one host in memory). Where every rank is on
// this host, osc/rdma carries out the others' CASes on this rank's words as
// CPU atomics (btl/vader's emulated atomics run them in this process's
// progress; with XPMEM, osc/rdma's CPU atomics), so a CPU compare-and-swap of
// our own is atomic with theirs. Over several hosts the others' may be the
// network card's: no such shortcut, and the job needs osc/ucx
// (docs/DISTRIBUTED.md, "Open MPI"). Where OMPI_MCA_osc rules osc/rdma out,
// the CAS goes through MPI as with any other MPI.
void decide_own_directory_cas() {
#if defined(OPEN_MPI) && (OMPI_MAJOR_VERSION < 4 || (OMPI_MAJOR_VERSION == 4 && (OMPI_MINOR_VERSION == 0 || \
                                                   (OMPI_MINOR_VERSION == 1 && OMPI_RELEASE_VERSION < 5))))
  const char* osc = config::foreign_variable("OMPI_MCA_osc");
  MPI_Comm host = MPI_COMM_NULL;
  int on_host = 0, ranks = 0;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &host);
  MPI_Comm_size(host, &on_host);
  MPI_Comm_free(&host);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  // osc/rdma may be chosen: no OMPI_MCA_osc, one naming it, or one that
  // excludes others ("^ucx") but not it.
  const bool rdma_possible =
      !osc || (osc[0] == '^' ? !std::strstr(osc, "rdma") : std::strstr(osc, "rdma") != nullptr);
  g_own_cas_in_memory = on_host == ranks && rdma_possible;
#endif
}

void ask_directory(dsm& d, std::size_t page, const std::int64_t* mine, std::int64_t* found) {
  static constexpr std::int64_t none = 0;
  const auto ranks = static_cast<std::size_t>(d.ranks);
  if (g_own_cas_in_memory && static_cast<int>(page % ranks) == d.rank) {
    std::int64_t expected = none;
    __atomic_compare_exchange_n(&d.entries[page / ranks], &expected, *mine, false,
                                __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    *found = expected;
    return;
  }
  if (MPI_Compare_and_swap(mine, &none, found, MPI_INT64_T, static_cast<int>(page % ranks),
                           static_cast<MPI_Aint>(page / ranks), d.directory) != MPI_SUCCESS)
    mpi_failed("the directory's compare-and-swap");
}

// Records the directory's answer for `page` (0: it had none, now ours).
int settle_home(dsm& d, std::size_t page, std::int64_t found) {
  const int h = found == 0 ? d.rank : static_cast<int>(found - 1);
  __atomic_store_n(&d.home_plus1[page], h + 1, __ATOMIC_RELAXED);  // placement_rank reads it
  if (on_this_node(d, h)) {
    map_from_node(d, page);
    d.read_elsewhere.watch(page);
  }
  return h;
}

int ask_home(dsm& d, std::size_t page) {
  const std::int64_t mine = d.rank + 1;
  std::int64_t found = 0;
  ask_directory(d, page, &mine, &found);
  if (MPI_Win_flush(static_cast<int>(page % static_cast<std::size_t>(d.ranks)), d.directory) !=
      MPI_SUCCESS)
    mpi_failed("the directory's compare-and-swap");
  return settle_home(d, page, found);
}

// The homes of [first, last] that this rank does not know yet, learnt all at
// once. Page p's entry is word p / ranks at rank p % ranks, so the range's
// entries are one contiguous slice at each directory rank: one atomic read
// (a no-op accumulate, atomic with the compare-and-swaps of other ranks) per
// rank, then one compare-and-swap only for each page that has no home yet
// (the first rank to ask becomes its home, as in home_of), all completed by
// one flush per rank. A range homed elsewhere costs one round trip per
// directory rank, not one operation per page (1 MiB: 256 atomics, 150–440 µs
// here, before).
void learn_homes(dsm& d, std::size_t first, std::size_t last) {
  std::size_t unknown = 0;
  for (std::size_t page = first; page <= last && unknown < 2; ++page)
    unknown += d.home_plus1[page] == 0;
  if (unknown < 2) return;  // home_of asks for one
  const auto ranks = static_cast<std::size_t>(d.ranks);
  std::int64_t* const seen = d.range_entries;
  std::fill(seen, seen + (last - first + 1), std::int64_t{0});
  // seen[k] is page first + k's entry: rank r's slice starts at page
  // first + shift (shift < ranks), its j-th word is page first + shift + j*ranks.
  auto slice = [&](std::size_t r, std::size_t* shift, std::size_t* count) {
    *shift = (r + ranks - first % ranks) % ranks;
    *count = *shift > last - first ? 0 : (last - first - *shift) / ranks + 1;
  };
  std::int64_t* const words = d.range_words;
  std::size_t at = 0;
  for (std::size_t r = 0; r < ranks; ++r) {
    std::size_t shift = 0, count = 0;
    slice(r, &shift, &count);
    if (count == 0) continue;
    if (MPI_Get_accumulate(nullptr, 0, MPI_INT64_T, words + at, static_cast<int>(count),
                           MPI_INT64_T, static_cast<int>(r),
                           static_cast<MPI_Aint>((first + shift) / ranks), static_cast<int>(count),
                           MPI_INT64_T, MPI_NO_OP, d.directory) != MPI_SUCCESS)
      mpi_failed("reading the directory");
    d.targets.add(static_cast<int>(r));
    at += count;
  }
  if (!d.targets.flush(d.directory)) mpi_failed("reading the directory");
  at = 0;
  for (std::size_t r = 0; r < ranks; ++r) {
    std::size_t shift = 0, count = 0;
    slice(r, &shift, &count);
    for (std::size_t j = 0; j < count; ++j) seen[shift + j * ranks] = words[at + j];
    at += count;
  }
  const std::int64_t mine = d.rank + 1;
  bool claimed = false;
  for (std::size_t page = first; page <= last; ++page) {
    if (d.home_plus1[page] != 0 || seen[page - first] != 0) continue;
    ask_directory(d, page, &mine, &seen[page - first]);
    d.targets.add(static_cast<int>(page % ranks));
    claimed = true;
  }
  if (claimed && !d.targets.flush(d.directory)) mpi_failed("the directory's compare-and-swap");
  for (std::size_t page = first; page <= last; ++page)
    if (d.home_plus1[page] == 0) settle_home(d, page, seen[page - first]);
}

void place_pages(void* p, std::size_t bytes, const distribution& where) {
  dsm& d = require_dsm("alloc_collective");
  if (d.one_copy) return;
  std::size_t first = 0, last = 0;
  page_range(d, p, bytes, "alloc_collective", &first, &last);
  const std::size_t pages = last - first + 1, ranks = static_cast<std::size_t>(d.ranks);
  // block: part r is pages [r * per_part, (r + 1) * per_part); cyclic: runs of
  // per_part pages dealt in turn.
  const bool cyclic = where.how == distribution::kind::cyclic;
  const std::size_t per_part =
      cyclic ? std::max<std::size_t>(1, (where.block_bytes + page_bytes - 1) / page_bytes)
             : (pages + ranks - 1) / ranks;
  std::lock_guard hold(d.lock);
  // Runs of pages homed on this node (this rank's own, with one node per
  // rank) are mapped from the node's memory and made read-write at once.
  std::size_t own_run = 0;  // pages of such a run so far, ending at `page`
  for (std::size_t k = 0; k < pages; ++k) {
    const std::size_t part = k / per_part;
    const int home = static_cast<int>(cyclic ? part % ranks : part);
    const std::size_t page = first + k;
    __atomic_store_n(&d.home_plus1[page], home + 1, __ATOMIC_RELAXED);  // placement_rank reads it
    const bool ours = on_this_node(d, home);
    if (ours) {
      d.read_elsewhere.watch(page);
      d.state.touched_home(page);
      ++own_run;
    }
    if (own_run && (!ours || k + 1 == pages)) {  // a run of this node's pages ended
      const std::size_t end = ours ? page + 1 : page;
      map_from_node(d, end - own_run, own_run);
      protect(d, end - own_run, PROT_READ | PROT_WRITE, own_run);
      own_run = 0;
    }
  }
}

int placement_rank(const void* p) noexcept {
  dsm* d = g_dsm.load(std::memory_order_acquire);
  std::size_t page = 0;
  // One copy: every rank holds every page; none is nearer than this one.
  if (!d || d->one_copy || !page_at(*d, static_cast<const char*>(p), &page)) return -1;
  // Written under the lock (a directory's answer, a collective array placed),
  // read here without it: a hint may be a moment old.
  return __atomic_load_n(&d->home_plus1[page], __ATOMIC_RELAXED) - 1;
}

}  // namespace ito::dist::detail

// SPDX-License-Identifier: Apache-2.0
#include "distributed/dsm/dsm.hpp"

#include <mpi.h>
#include <signal.h>
#include <sys/mman.h>
#include <ucontext.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "distributed/dist_state.hpp"
#include "distributed/dsm/diff_mail.hpp"
#include "distributed/dsm/node_memory.hpp"
#include "distributed/dsm/page_board.hpp"
#include "distributed/dsm/race_check.hpp"
#include "distributed/dsm/reserved_array.hpp"
#include "distributed/dsm/target_flush.hpp"
#include "distributed/dsm/twin_frames.hpp"
#include "ito/dist.hpp"
#include "ito/error.hpp"

namespace ito::dist::detail {
namespace {

constexpr std::size_t page_bytes = 4096;

// Away from its home a page is invalid, shared (a read-only copy), modified
// (written since the last release, with a twin) or pinned. On its home it is
// home (read-write, no other rank reads it), home_watched (others read it:
// read-only, so that a write faults and is known) or home_hot (written since
// others read it, or pinned: read-write, with a twin that each release of
// the home compares it with to know whether to notify). A hot page that a
// release finds unchanged is watched again (unless pinned): a home whose
// arrays others read would otherwise compare every page it ever wrote at
// every release (a sort at two ranks: ~1,000 pages, 4 MiB, per release,
// 7-13 % of its time), where a page written again costs one fault (~3 us).
// With node homes, a page homed on another rank of this node that this rank
// has only read is home_read (read-only: a write faults and makes it home),
// so that a rank which only reads its node's pages notifies nobody when
// others begin to read them.
enum page_state : std::uint8_t {
  invalid = 0,
  shared,
  modified,
  pinned,
  home,
  home_watched,
  home_hot,
  home_read,
};

// Process-local bookkeeping, in MAP_NORESERVE arrays indexed by page (only the
// entries of touched pages take memory). Written only with `lock` held.
struct dsm {
  // The whole job is one node (node_memory.hpp): every rank maps the one
  // copy read-write, so there is no protocol: no fault, twin or message, and
  // a fence is a memory fence. Only pins are counted (unpin's errors).
  bool one_copy = false;
  // Several nodes, some of several ranks: pages homed on this node are
  // mapped from node_fd (node_alias), others from this rank's own memory.
  bool node_homes = false;
  char* view = nullptr;
  char* alias = nullptr;       // this rank's memory: copies of pages homed elsewhere
  char* node_alias = nullptr;  // its node's (the same as alias unless node_homes)
  int node_fd = -1;
  int node = 0;
  std::vector<int> node_of_rank;
  std::vector<std::vector<int>> ranks_of_node;
  std::size_t pages = 0;         // the region's, then the globals' (pages are numbered so)
  std::size_t region_pages = 0;  // pages of the region proper; the globals' follow
  char* globals = nullptr;       // where the globals' pages are in the program (or null)
  int rank = 0;
  int ranks = 1;
  // Over every rank's node alias (the region and the globals), then its
  // sharing words (below): one window, so that MPI orders a rank's
  // accumulates on a home's words before its get-accumulate of a page there
  // (a first fetch: one round trip; MPI orders accumulates to one target only
  // within a window).
  MPI_Win data = MPI_WIN_NULL;
  MPI_Win directory = MPI_WIN_NULL;  // over every rank's managed directory entries
  std::int64_t* entries = nullptr;   // this rank's: home + 1 of page rank + k * ranks
  std::size_t entry_count = 0;
  // The sharing words, in the data window from byte sharing_at on: at word
  // p, the readers of page p if this rank is its home (a bit per rank,
  // rank % 64; in the node's memory), then two boards: `stale` (write
  // notices: pages others wrote that this rank may hold copies of) and
  // `read_elsewhere` (pages homed on this node that another rank began to
  // read).
  MPI_Aint sharing_at = 0;
  std::size_t readers_words = 0;  // whole pages of words (node_memory.hpp)
  std::uint64_t* sharing_words = nullptr;
  std::size_t sharing_count = 0;
  page_board stale, read_elsewhere;
  board_posts posts;
  target_set targets;  // ranks a batch of operations went to, flushed one by one (target_flush.hpp)
  std::uint8_t* state = nullptr;
  std::int32_t* home_plus1 = nullptr;  // cache of the directory
  std::uint8_t* registered = nullptr;  // 1 once this rank is among the page's readers
  std::uint32_t* pins = nullptr;       // pins of the page not yet undone (pin/unpin)
  // 1 for a page checked out to be overwritten whole (access::write): all of
  // it goes at the next release, whatever its twin, and no merge touches it
  // until then.
  std::uint8_t* overwrite = nullptr;
  std::unique_ptr<twin_frames> twins;  // of modified, pinned and hot pages
  std::size_t* modified_list = nullptr;  // pages now modified, pinned or home_hot
  std::size_t modified_count = 0;
  std::size_t* written = nullptr;      // a release's pages to send write notices for
  std::size_t written_count = 0;
  std::uint64_t* written_readers = nullptr;  // and their readers
  std::uint8_t* noticed = nullptr;     // release_and_invalidate: modified pages left invalid
  std::size_t* noticed_list = nullptr;
  std::size_t* dropped = nullptr;      // an acquire's shared copies to drop, a run at a time
  // Scratch of a checkout or a block fault (nothing allocated on the fault
  // path), as long as the DSM and touched only as far as a range needs: the
  // range's directory entries, the words read from the directory, and copies
  // of this rank's readers bit (the first reader_bits_filled are written).
  std::int64_t* range_entries = nullptr;
  std::int64_t* range_words = nullptr;
  std::uint64_t* reader_bits = nullptr;
  std::size_t reader_bits_filled = 0;
  dsm_stats stats;
  bool check_races = false;   // ITO_DSM_CHECK: read the home's bytes back before each diff
  bool mail_open = false;  // this release may send diffs by message (diff_mail.hpp)
  bool mail = false;       // and sends all of them so, one message per home
  std::size_t fault_block_pages = 1;  // ITO_DSM_BLOCK: what a fault brings in, in pages
  char master[page_bytes];    // a copy of the home's page: race checks, merges
  char snapshot[page_bytes];  // a pinned page as its release compares it
  int run_at[page_bytes / 2];  // send_diff's runs of changed bytes: where, how long
  int run_length[page_bytes / 2];
  std::mutex lock;
  struct sigaction previous {};
};

std::atomic<dsm*> g_dsm{nullptr};

// Where page `page` is in the application's view.
char* view_of(const dsm& d, std::size_t page) noexcept {
  return page < d.region_pages ? d.view + page * page_bytes
                               : d.globals + (page - d.region_pages) * page_bytes;
}

// The page holding `at`, if the DSM manages it (the region, or the globals).
bool page_at(const dsm& d, const char* at, std::size_t* page) noexcept {
  if (at >= d.view && at < d.view + d.region_pages * page_bytes) {
    *page = static_cast<std::size_t>(at - d.view) / page_bytes;
    return true;
  }
  if (d.globals && at >= d.globals && at < d.globals + (d.pages - d.region_pages) * page_bytes) {
    *page = d.region_pages + static_cast<std::size_t>(at - d.globals) / page_bytes;
    return true;
  }
  return false;
}

// Where sharing word `word` lies in the data window.
MPI_Aint sharing_disp(const dsm& d, std::size_t word) noexcept {
  return d.sharing_at + static_cast<MPI_Aint>(word * sizeof(std::uint64_t));
}

// A change of the view's mappings failed (errno says why): ends the process.
// Neither declared nor inferred [[noreturn]] (noipa): ASan unpoisons the
// stack before a call to such a function, which maps memory, and at the
// mapping limit that fails, ending the process before this can say why
// (test dsm_more_pages_than_mappings_allowed).
[[gnu::noipa]] void mapping_failed(const dsm& d, const char* call) {
  if (errno == ENOMEM) {
    unsigned long limit = 0;
    if (std::FILE* f = std::fopen("/proc/sys/vm/max_map_count", "r")) {
      if (std::fscanf(f, "%lu", &limit) != 1) limit = 0;
      std::fclose(f);
    }
    std::fprintf(stderr,
                 "ito: dsm: rank %d reached Linux's limit of memory mappings (vm.max_map_count = "
                 "%lu): every run of DSM pages whose access differs from its neighbours' takes "
                 "one; raise it (sysctl -w vm.max_map_count=1048576) or touch fewer, more "
                 "contiguous pages between fences\n",
                 d.rank, limit);
    std::_Exit(2);
  }
  std::fprintf(stderr, "ito: dsm: %s failed: %s\n", call, std::strerror(errno));
  std::abort();
}

// Pages [page, page + pages), all in the region or all in the globals.
// Every run of pages with one protection is a mapping of its own to Linux,
// which allows vm.max_map_count of them per process (65530 by default).
void protect(dsm& d, std::size_t page, int prot, std::size_t pages = 1) {
  if (mprotect(view_of(d, page), pages * page_bytes, prot) != 0) mapping_failed(d, "mprotect");
}

// Whether rank h is of this rank's node (h itself, with one node per rank).
bool on_this_node(const dsm& d, int h) noexcept {
  return d.node_of_rank[static_cast<std::size_t>(h)] == d.node;
}

// Where this rank's copy of `page`, whose home it knows, is: the node's
// memory for a page homed on this node, else its own.
char* copy_of(const dsm& d, std::size_t page) noexcept {
  const bool node_page = d.node_homes && on_this_node(d, d.home_plus1[page] - 1);
  return (node_page ? d.node_alias : d.alias) + page * page_bytes;
}

// Node homes: pages [first, first + pages), just found to be homed on this
// node, are mapped from the node's memory (no access yet, as before).
void map_from_node(dsm& d, std::size_t first, std::size_t pages = 1) {
  if (!d.node_homes) return;
  if (mmap(view_of(d, first), pages * page_bytes, PROT_NONE, MAP_SHARED | MAP_FIXED, d.node_fd,
           static_cast<off_t>(first * page_bytes)) == MAP_FAILED)
    mapping_failed(d, "mapping a page of the node's memory (mmap)");
}

// Calls each(first, count, value) for every run of pages of the ascending
// list whose value_of(page) is the same and not `none`, consecutive and in one
// area (the region or the globals): what one mprotect or madvise covers.
template <class ValueOf, class Each>
void for_each_listed_run(const dsm& d, const std::size_t* pages, std::size_t n, int none,
                         ValueOf&& value_of, Each&& each) {
  std::size_t k = 0;
  while (k < n) {
    const int value = value_of(pages[k]);
    std::size_t end = k + 1;
    if (value != none) {
      while (end < n && pages[end] == pages[end - 1] + 1 && pages[end] != d.region_pages &&
             value_of(pages[end]) == value)
        ++end;
      each(pages[k], pages[end - 1] - pages[k] + 1, value);
    }
    k = end;
  }
}

// The region and the globals, whole.
void protect_all(dsm& d, int prot) {
  mprotect(d.view, d.region_pages * page_bytes, prot);
  if (d.globals) mprotect(d.globals, (d.pages - d.region_pages) * page_bytes, prot);
}

// The page's home: the cached answer, else the directory's (the first rank to
// ask becomes the home: first touch).
// Asks the directory for `page`'s home, claiming it if it has none: the
// answer lands in *found once the directory window is flushed.
void ask_directory(dsm& d, std::size_t page, const std::int64_t* mine, std::int64_t* found) {
  static constexpr std::int64_t none = 0;
  const auto ranks = static_cast<std::size_t>(d.ranks);
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

int home_of(dsm& d, std::size_t page) {
  if (const std::int32_t h = d.home_plus1[page]) return h - 1;
  const std::int64_t mine = d.rank + 1;
  std::int64_t found = 0;
  ask_directory(d, page, &mine, &found);
  if (MPI_Win_flush(static_cast<int>(page % static_cast<std::size_t>(d.ranks)), d.directory) !=
      MPI_SUCCESS)
    mpi_failed("the directory's compare-and-swap");
  return settle_home(d, page, found);
}

void fetch(dsm& d, std::size_t page, int from) {
  const auto at = static_cast<MPI_Aint>(page * page_bytes);
  if (MPI_Get(d.alias + page * page_bytes, page_bytes, MPI_BYTE, from, at, page_bytes, MPI_BYTE,
              d.data) != MPI_SUCCESS ||
      MPI_Win_flush(from, d.data) != MPI_SUCCESS)
    mpi_failed("fetching a page from its home");
}

// A rank's bit in a readers mask: ranks 64 apart share one (a notice then
// reaches all of them, which is safe: a notice only costs a refetch).
std::uint64_t reader_bit(int rank) noexcept { return std::uint64_t{1} << (rank % 64); }

// Joins this rank to the readers of `count` pages from `first`, all homed on
// `h`: their readers masks are consecutive words there, so one accumulate
// (`bits`: count copies of this rank's bit); the read-elsewhere marks are
// posted, and go with the caller's posts.send, which flushes both.
void join_readers(dsm& d, std::size_t first, std::size_t count, int h, const std::uint64_t* bits) {
  if (MPI_Accumulate(bits, static_cast<int>(count), MPI_UINT64_T, h, sharing_disp(d, first),
                     static_cast<int>(count), MPI_UINT64_T, MPI_BOR, d.data) != MPI_SUCCESS)
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
  d.posts.send(d.data, d.sharing_at);
}

// A fetch that makes this rank one of the page's readers first
// (register_reader's order), in one round trip where the home's node is the
// home alone: the readers bit and the read-elsewhere mark are accumulates to
// the home in the data window, and the page comes by a get-accumulate after
// them, which MPI orders after them (accumulates to one target, one window).
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
  d.posts.issue(d.data, d.sharing_at);
  constexpr int words = static_cast<int>(page_bytes / sizeof(std::uint64_t));
  if (MPI_Get_accumulate(nullptr, 0, MPI_UINT64_T, d.alias + page * page_bytes, words, MPI_UINT64_T,
                         h, static_cast<MPI_Aint>(page * page_bytes), words, MPI_UINT64_T,
                         MPI_NO_OP, d.data) != MPI_SUCCESS ||
      MPI_Win_flush(h, d.data) != MPI_SUCCESS)
    mpi_failed("fetching a page from its home");
  d.posts.completed();
}

void take_twin(dsm& d, std::size_t page) {
  std::memcpy(d.twins->take(page), copy_of(d, page), page_bytes);
}

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

// Makes a non-home page writable with a twin of what it holds now.
// Pages to make read-write, one mprotect per run of neighbours: each page
// either goes at once (no batch) or joins the run, which flush() protects.
class writable_runs {
 public:
  explicit writable_runs(dsm& d, int prot = PROT_READ | PROT_WRITE) : d_(d), prot_(prot) {}
  writable_runs(const writable_runs&) = delete;
  writable_runs& operator=(const writable_runs&) = delete;
  void add(std::size_t page) {
    if (count_ && page == first_ + count_ && page != d_.region_pages) {
      ++count_;
      return;
    }
    flush();
    first_ = page;
    count_ = 1;
  }
  void flush() {
    if (count_) protect(d_, first_, prot_, count_);
    count_ = 0;
  }

 private:
  dsm& d_;
  int prot_;
  std::size_t first_ = 0, count_ = 0;
};

void make_writable(dsm& d, std::size_t page, writable_runs* batch) {
  if (batch) batch->add(page);
  else protect(d, page, PROT_READ | PROT_WRITE);
}

// With d.lock held: the twin first, so the page is not writable before it.
void make_modified(dsm& d, std::size_t page, std::uint8_t how, writable_runs* batch = nullptr) {
  take_twin(d, page);
  make_writable(d, page, batch);
  d.state[page] = how;
  d.modified_list[d.modified_count++] = page;
}

void bring_in_block(dsm& d, std::size_t page);

// A fault on `page` (write: a store), with d.lock held. Another thread may
// have served the same page meanwhile: then there is nothing left to do.
void serve_fault(dsm& d, std::size_t page, bool write) {
  const std::uint8_t s = d.state[page];
  if (s == modified || s == pinned || s == home || s == home_hot) return;
  if ((s == shared || s == home_watched || s == home_read) && !write) return;
  if (s == home_read) {  // unwatched: notified as written when a reader comes
    protect(d, page, PROT_READ | PROT_WRITE);
    d.state[page] = home;
    return;
  }
  if (s == home_watched) {  // this home writes a page others read: hot till a release finds
                            // it unchanged
    take_twin(d, page);
    protect(d, page, PROT_READ | PROT_WRITE);
    d.state[page] = home_hot;
    d.modified_list[d.modified_count++] = page;
    ++d.stats.home_write_faults;
    return;
  }
  const int h = home_of(d, page);
  if (on_this_node(d, h)) {
    const bool read_only = !write && h != d.rank;  // another's page: see home_read
    protect(d, page, read_only ? PROT_READ : PROT_READ | PROT_WRITE);
    d.state[page] = read_only ? home_read : home;
    return;
  }
  if (s == invalid) {
    if (d.fault_block_pages > 1) {
      bring_in_block(d, page);  // shared now, with its block's other missing pages
    } else {
      fetch_as_reader(d, page, h);
      ++d.stats.fetches;
    }
  }
  if (write) {
    make_modified(d, page, modified);
  } else {
    protect(d, page, PROT_READ);
    d.state[page] = shared;
  }
}

void chain_to_previous(int sig, siginfo_t* info, void* context) {
  const struct sigaction& prev = g_dsm.load(std::memory_order_acquire)->previous;
  if (prev.sa_flags & SA_SIGINFO) {
    if (prev.sa_sigaction) prev.sa_sigaction(sig, info, context);
    return;
  }
  if (prev.sa_handler == SIG_IGN) return;
  if (prev.sa_handler == SIG_DFL) {
    signal(sig, SIG_DFL);  // the access faults again and ends the process, as without ito
    return;
  }
  prev.sa_handler(sig);
}

void on_fault(int sig, siginfo_t* info, void* context) {
  dsm* d = g_dsm.load(std::memory_order_acquire);
  char* at = static_cast<char*>(info->si_addr);
  std::size_t page = 0;
  if (!d || !page_at(*d, at, &page)) {
    if (d) chain_to_previous(sig, info, context);
    else signal(sig, SIG_DFL);
    return;
  }
  const int saved = errno;
  const auto* uc = static_cast<const ucontext_t*>(context);
  const bool write = (uc->uc_mcontext.gregs[REG_ERR] & 2) != 0;  // x86: the fault was a store
  {
    std::lock_guard hold(d->lock);
    serve_fault(*d, page, write);
  }
  errno = saved;
}

// Without diff mail (a one-run diff in a release of one or two pages, or no
// progress thread), each diff is a put, complete at its home before the next
// one is issued: a round trip per page. (Completing a release's puts with one
// MPI_Win_flush_all, as at first, lost writes over UCX's shared-memory
// transports: target_flush.hpp.)
bool complete_diff(dsm& d, int home) {
  if (MPI_Win_flush(home, d.data) != MPI_SUCCESS) mpi_failed("completing a diff");
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
// A page a write checkout overwrites whole (d.overwrite) goes out whole: its
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
  const bool whole = d.overwrite[page] != 0;
  const int runs = whole ? whole_page_run(d) : differing_runs(d, now, twin);
  if (runs == 0) return false;
  ++d.stats.diffs_sent;
  const int h = home_of(d, page);
  const auto at = static_cast<MPI_Aint>(page * page_bytes);
  if (d.check_races && !whole) {
    if (MPI_Get(d.master, page_bytes, MPI_BYTE, h, at, page_bytes, MPI_BYTE, d.data) != MPI_SUCCESS ||
        MPI_Win_flush(h, d.data) != MPI_SUCCESS)
      mpi_failed("reading a page back from its home");
    report_races(d.rank, h, view_of(d, page), now, twin, d.master, page_bytes);
  }
  if (keep_twin) {
    std::memcpy(twin, d.snapshot, page_bytes);
    now = twin;
  }
  if (d.mail || (d.mail_open && runs > 1)) {  // with the release's others for this home
    for (int k = 0; k < runs; ++k)
      queue_diff(h, page * page_bytes + static_cast<std::size_t>(d.run_at[k]), now + d.run_at[k],
                 static_cast<std::size_t>(d.run_length[k]));
    return true;
  }
  ++d.stats.diff_transfers;
  if (runs == 1) {  // one stretch of bytes (the usual case): no type to build
    if (MPI_Put(now + d.run_at[0], d.run_length[0], MPI_BYTE, h, at + d.run_at[0], d.run_length[0],
                MPI_BYTE, d.data) != MPI_SUCCESS)
      mpi_failed("sending a diff to its home");
    return complete_diff(d, h);
  }
  // One put per page, its runs described by an indexed type on both sides:
  // a put per run (up to 2048 for interleaved writers) costs a round of
  // bookkeeping each, and MPICH 4.0 over UCX's shared-memory transports lost
  // some of a thousand outstanding one-byte puts here (tests/distributed merge test).
  MPI_Datatype runs_type;
  if (MPI_Type_indexed(runs, d.run_length, d.run_at, MPI_BYTE, &runs_type) != MPI_SUCCESS ||
      MPI_Type_commit(&runs_type) != MPI_SUCCESS)
    mpi_failed("describing a diff");
  if (MPI_Put(now, 1, runs_type, h, at, 1, runs_type, d.data) != MPI_SUCCESS)
    mpi_failed("sending a diff to its home");
  MPI_Type_free(&runs_type);  // MPI keeps it alive until the put completes
  return complete_diff(d, h);
}

// Write notices for `page` to its readers other than this rank.
void post_notices(dsm& d, std::size_t page, std::uint64_t readers) {
  for (; readers; readers &= readers - 1)
    for (int r = __builtin_ctzll(readers); r < d.ranks; r += 64)
      if (r != d.rank) d.posts.post(r, d.stale, page);
}

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

// After the diffs (each complete at its home already: delivered, or
// complete_diff), reads the readers of the pages they went to, and sends
// every notice: one more round trip where another home's pages were written
// at more than two ranks, else none.
void complete_release(dsm& d) {
  if (d.written_count != 0) {
    for (std::size_t k = 0; k < d.written_count; ++k) {
      const std::size_t page = d.written[k];
      if (MPI_Get(&d.written_readers[k], 1, MPI_UINT64_T, home_of(d, page),
                  sharing_disp(d, page), 1, MPI_UINT64_T, d.data) != MPI_SUCCESS)
        mpi_failed("reading a page's readers");
      d.targets.add(home_of(d, page));
    }
    if (!d.targets.flush(d.data)) mpi_failed("reading the readers of written pages");
    for (std::size_t k = 0; k < d.written_count; ++k)
      post_notices(d, d.written[k], d.written_readers[k]);
    d.written_count = 0;
  }
  d.stats.notices_sent += d.posts.send(d.data, d.sharing_at);
}

// The memory of free twin frames is kept while at most kept_twins_max are
// (16 MiB a rank): a page written in the next interval, the usual loop, or a
// new page then takes its twin without the kernel's first-touch fault, and
// the release makes no madvise (in a process with several threads, each one
// shoots down the others' TLBs). A release that would go beyond gives back
// the memory of all the frames it frees.
constexpr std::size_t kept_twins_max = (16u << 20) / page_bytes;

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
    if (d.state[page] == invalid) return d.read_elsewhere.keep(page);
    if (d.state[page] == home_read) {  // read-only already, and not written here
      d.state[page] = home_watched;
      return;
    }
    if (d.state[page] != home) return;  // watched already, or listed below
    protect(d, page, PROT_READ);
    d.state[page] = home_watched;
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
    away += d.state[list[k]] == modified || d.state[list[k]] == pinned;
  d.mail_open = diff_mail_open();
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
    if (d.state[page] == home_hot && !d.pins[page] &&
        std::memcmp(copy_of(d, page), d.twins->of(page), page_bytes) == 0)
      d.state[page] = home_watched;
  }
  auto new_access = [&](std::size_t page) {
    if (d.state[page] == home_watched) return PROT_READ;
    return d.state[page] != modified ? -1 : d.noticed[page] ? PROT_NONE : PROT_READ;
  };
  for_each_listed_run(d, list, count, -1, new_access, [&](std::size_t first, std::size_t n, int prot) {
    protect(d, first, prot, n);
  });
  for (std::size_t k = 0; k < count; ++k) {
    const std::size_t page = list[k];
    switch (d.state[page]) {
      case home_hot:
      case home_watched:  // cooling: read-only now, its twin given back below
        if (hot_page_changed(d, page)) note_written(d, page);
        break;
      case pinned:  // writable throughout: its twin becomes what was sent
        if (send_diff(d, page, true)) note_written(d, page);
        d.overwrite[page] = 0;
        break;
      default:  // modified
        if (send_diff(d, page, false)) note_written(d, page);
        d.overwrite[page] = 0;
        d.state[page] = d.noticed[page] ? invalid : shared;
    }
  }
  // The hot and pinned pages stay listed; the others' twins are released
  // (after their diffs, which read them).
  auto released = [&](std::size_t page) {
    return d.state[page] == home_hot || d.state[page] == pinned ? 0 : 1;
  };
  if (d.mail_open) d.stats.diff_transfers += deliver_diffs();  // complete at their homes
  d.twins->give_back(list, count, released);
  d.stats.twin_pages_kept = d.twins->kept();
  std::size_t kept = 0;
  for (std::size_t k = 0; k < count; ++k)
    if (!released(list[k])) list[kept++] = list[k];
  d.modified_count = kept;
  complete_release(d);
}

// The home's copy of `page` into d.master.
void fetch_master(dsm& d, std::size_t page) {
  const int h = home_of(d, page);
  if (MPI_Get(d.master, page_bytes, MPI_BYTE, h, static_cast<MPI_Aint>(page * page_bytes),
              page_bytes, MPI_BYTE, d.data) != MPI_SUCCESS ||
      MPI_Win_flush(h, d.data) != MPI_SUCCESS)
    mpi_failed("fetching a page from its home");
}

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
  if (d.overwrite[page]) return;  // all of it goes out at the next release: nothing to merge
  switch (d.state[page]) {
    case shared:
      if (d.pins[page]) {  // checked out to read: refreshed in place, never faulting
        fetch(d, page, home_of(d, page));
        ++d.stats.fetches;
      } else {
        protect(d, page, PROT_NONE);
        d.state[page] = invalid;
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

// A notice for a shared copy nobody pinned: dropped, but in a batch
// (drop_copies), one mprotect per run of neighbours. Any other: acted on now.
void take_notice(dsm& d, std::size_t page, std::size_t* to_drop) {
  if (d.state[page] == shared && !d.pins[page] && !d.overwrite[page])
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
                          d.state[page] = invalid;
                      });
  d.stats.invalidations += n;
}

void take_write_notices(dsm& d) {
  std::size_t to_drop = 0;
  d.stale.take([&](std::size_t page) { take_notice(d, page, &to_drop); });
  drop_copies(d, to_drop);
}

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

}  // namespace

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
  d->state = reserve_array<std::uint8_t>(d->pages);
  d->home_plus1 = reserve_array<std::int32_t>(d->pages);
  d->registered = reserve_array<std::uint8_t>(d->pages);
  d->pins = reserve_array<std::uint32_t>(d->pages);
  d->overwrite = reserve_array<std::uint8_t>(d->pages);
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
  if (stats_requested()) {
    const dsm_stats& c = d->stats;
    std::fprintf(stderr,
                 "ito: dsm: stats: rank %d: %llu pages fetched (and %llu checkout or block "
                 "transfers), %llu diffs sent in %llu transfers, %llu write notices sent, %llu "
                 "copies invalidated, %llu write faults on watched home pages, %llu twin pages "
                 "kept\n",
                 d->rank, static_cast<unsigned long long>(c.fetches),
                 static_cast<unsigned long long>(c.fetch_transfers),
                 static_cast<unsigned long long>(c.diffs_sent),
                 static_cast<unsigned long long>(c.diff_transfers),
                 static_cast<unsigned long long>(c.notices_sent),
                 static_cast<unsigned long long>(c.invalidations),
                 static_cast<unsigned long long>(c.home_write_faults),
                 static_cast<unsigned long long>(c.twin_pages_kept));
  }
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
  release_array(d->state, d->pages);
  release_array(d->home_plus1, d->pages);
  release_array(d->registered, d->pages);
  release_array(d->pins, d->pages);
  release_array(d->overwrite, d->pages);
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

void sd_fence() {
  dsm& d = require_dsm("sd_fence");
  if (d.one_copy) return std::atomic_thread_fence(std::memory_order_seq_cst);
  std::lock_guard hold(d.lock);
  release(d);
}

void si_fence() {
  dsm& d = require_dsm("si_fence");
  if (d.one_copy) return std::atomic_thread_fence(std::memory_order_seq_cst);
  std::lock_guard hold(d.lock);
  take_write_notices(d);
}

void release_and_invalidate() {
  dsm& d = require_dsm("release_and_invalidate");
  if (d.one_copy) return std::atomic_thread_fence(std::memory_order_seq_cst);
  std::lock_guard hold(d.lock);
  // The notices first: a modified page that another rank wrote too is left
  // invalid by the release, so that a store from another thread of this
  // rank fetches what the other rank released rather than twinning a stale
  // copy.
  std::size_t noticed = 0, to_drop = 0;
  d.stale.take([&](std::size_t page) {
    if (d.state[page] == modified) {
      d.noticed[page] = 1;
      d.noticed_list[noticed++] = page;
    } else {
      take_notice(d, page, &to_drop);
    }
  });
  drop_copies(d, to_drop);
  release(d);
  for (std::size_t k = 0; k < noticed; ++k) d.noticed[d.noticed_list[k]] = 0;
  take_write_notices(d);  // those that landed during the release
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
      d.state[page] = page_state::home;
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

namespace {

// One more pin of a page this rank holds (or is home of): it stays
// accessible, never faulting, until its last pin goes.
// (batch: its access changes with its neighbours', at batch->flush().)
void pin_page(dsm& d, std::size_t page, writable_runs* batch = nullptr) {
  switch (d.state[page]) {
    case shared: make_modified(d, page, pinned, batch); break;
    case modified: d.state[page] = pinned; break;
    case home_watched:
    case home_read:
    case home:  // hot: a reader that arrives later does not make it fault
      take_twin(d, page);
      if (d.state[page] != home) make_writable(d, page, batch);
      else note_written(d, page);  // unwatched until now: its past writes are unknown
      d.state[page] = home_hot;
      d.modified_list[d.modified_count++] = page;
      break;
    default: break;
  }
}

void count_pins(dsm& d, std::size_t first, std::size_t last, const char* what) {
  for (std::size_t page = first; page <= last; ++page)
    if (d.pins[page] == UINT32_MAX)
      throw usage_error(EINVAL, std::string("ito: dsm: ") + what +
                                    ": a page pinned 2^32 - 1 times without unpin");
  for (std::size_t page = first; page <= last; ++page) ++d.pins[page];
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
    return d.state[page] == invalid && !on_this_node(d, home_of(d, page));
  };
  auto unregistered = [&](std::size_t page) { return away(page) && !d.registered[page]; };
  for_each_run(d, first, last, most_pages, unregistered, [&](std::size_t start, std::size_t n) {
    for (; d.reader_bits_filled < n; ++d.reader_bits_filled)
      d.reader_bits[d.reader_bits_filled] = reader_bit(d.rank);
    join_readers(d, start, n, home_of(d, start), d.reader_bits);
  });
  d.posts.send(d.data, d.sharing_at);
  auto whole = [&](std::size_t page) {
    const char* at = view_of(d, page);
    return at >= begin && at + page_bytes <= end;
  };
  auto fetched = [&](std::size_t page) { return away(page) && !(overwrite && whole(page)); };
  for_each_run(d, first, last, most_pages, fetched, [&](std::size_t start, std::size_t n) {
    const auto bytes = static_cast<int>(n * page_bytes);
    if (MPI_Get(d.alias + start * page_bytes, bytes, MPI_BYTE, home_of(d, start),
                static_cast<MPI_Aint>(start * page_bytes), bytes, MPI_BYTE, d.data) != MPI_SUCCESS)
      mpi_failed("fetching a checkout's pages from their home");
    ++d.stats.fetch_transfers;
    d.targets.add(home_of(d, start));
  });
  if (!d.targets.flush(d.data)) mpi_failed("fetching a checkout's pages");
  for_each_run(d, first, last, most_pages, fetched, [&](std::size_t start, std::size_t n) {
    protect(d, start, PROT_READ, n);
    for (std::size_t page = start; page < start + n; ++page) d.state[page] = shared;
    d.stats.fetches += n;
  });
  if (!overwrite) return;
  writable_runs batch(d);
  for (std::size_t page = first; page <= last; ++page) {
    if (!away(page) || !whole(page)) continue;
    batch.add(page);
    d.state[page] = modified;
    d.modified_list[d.modified_count++] = page;
    d.overwrite[page] = 1;
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
  for (std::size_t page = first; page <= last; ++page) {
    serve_fault(d, page, false);  // fetched (or ours, if we are its home)
    pin_page(d, page);
  }
}

namespace {

// With d.lock held: pins the range's pages, bringing in those this rank
// neither holds nor homes (unless `held_only`: then, where there is one,
// nothing is done and the answer is false).
bool check_out_locked(dsm& d, void* p, std::size_t bytes, access how, bool held_only) {
  std::size_t first = 0, last = 0;
  page_range(d, p, bytes, "checkout", &first, &last);
  if (held_only && !d.one_copy) {
    for (std::size_t page = first; page <= last; ++page)
      if (d.state[page] == invalid && !on_this_node(d, home_of(d, page))) return false;
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
    const int h = d.state[page] == invalid ? home_of(d, page) : -1;
    if (h >= 0 && on_this_node(d, h)) {
      const bool read = how == access::read && h != d.rank;
      d.state[page] = read ? home_read : home;
      (read ? read_only : batch).add(page);
    }
    // To read, a copy stays read-only and is refreshed in place at acquires
    // while pinned (act_on_notice); a home's page is the master already.
    if (how != access::read) pin_page(d, page, &batch);
  }
  batch.flush();
  read_only.flush();
  return true;
}

}  // namespace

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

void mpi_failed(const char* what) {
  std::fprintf(stderr, "ito: dsm: %s failed\n", what);
  std::abort();
}

dsm_stats stats() noexcept {
  dsm* d = g_dsm.load(std::memory_order_acquire);
  if (!d) return {};
  std::lock_guard hold(d->lock);
  return d->stats;
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
    if (--d.pins[page] == 0 && d.state[page] == pinned) d.state[page] = modified;
}

}  // namespace ito::dist::detail

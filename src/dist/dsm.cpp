// SPDX-License-Identifier: Apache-2.0
#include "dist/dsm.hpp"

#include <mpi.h>
#include <signal.h>
#include <sys/mman.h>
#include <ucontext.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "dist/dist_state.hpp"
#include "dist/race_check.hpp"
#include "ito/error.hpp"

namespace ito::dist::detail {
namespace {

constexpr std::size_t page_bytes = 4096;

enum page_state : std::uint8_t { invalid = 0, shared = 1, modified = 2, home = 3, pinned = 4 };

// Process-local bookkeeping, in MAP_NORESERVE arrays indexed by page (only the
// entries of touched pages take memory). Written only with `lock` held.
struct dsm {
  char* view = nullptr;
  char* alias = nullptr;
  std::size_t pages = 0;         // the region's, then the globals' (pages are numbered so)
  std::size_t region_pages = 0;  // pages of the region proper; the globals' follow
  char* globals = nullptr;       // where the globals' pages are in the program (or null)
  int rank = 0;
  int ranks = 1;
  MPI_Win data = MPI_WIN_NULL;       // over every rank's alias
  MPI_Win directory = MPI_WIN_NULL;  // over every rank's managed directory entries
  std::int64_t* entries = nullptr;   // this rank's: home + 1 of page rank + k * ranks
  std::size_t entry_count = 0;
  std::uint8_t* state = nullptr;
  std::int32_t* home_plus1 = nullptr;  // cache of the directory
  char* twins = nullptr;               // page i's twin at twins + i * page_bytes
  std::size_t* shared_list = nullptr;  // pages now Shared (si_fence invalidates them)
  std::uint8_t* listed = nullptr;      // 1 while a page is on shared_list
  std::size_t shared_count = 0;
  std::size_t* modified_list = nullptr;  // pages now Modified or Pinned
  std::size_t modified_count = 0;
  bool check_races = false;   // ITO_DSM_CHECK: read the home's bytes back before each diff
  char master[page_bytes];    // send_diff's copy of the home's page, when checking
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

template <class T>
T* reserve_array(std::size_t n) {
  void* p = mmap(nullptr, n * sizeof(T) + 1, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    std::fprintf(stderr, "ito: dsm: cannot reserve the page tables: %s\n", std::strerror(errno));
    std::exit(2);
  }
  return static_cast<T*>(p);
}

template <class T>
void release_array(T* p, std::size_t n) {
  if (p) munmap(p, n * sizeof(T) + 1);
}

[[noreturn]] void mpi_failed(const char* what) {
  std::fprintf(stderr, "ito: dsm: %s failed\n", what);
  std::abort();
}

// Every run of pages with one protection is a mapping of its own to Linux,
// which allows vm.max_map_count of them per process (65530 by default).
void protect(dsm& d, std::size_t page, int prot) {
  if (mprotect(view_of(d, page), page_bytes, prot) == 0) return;
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
  std::fprintf(stderr, "ito: dsm: mprotect failed: %s\n", std::strerror(errno));
  std::abort();
}

// The page's home: the cached answer, else the directory's (the first rank to
// ask becomes the home: first touch).
int home_of(dsm& d, std::size_t page) {
  if (const std::int32_t h = d.home_plus1[page]) return h - 1;
  const int manager = static_cast<int>(page % static_cast<std::size_t>(d.ranks));
  const auto slot = static_cast<MPI_Aint>(page / static_cast<std::size_t>(d.ranks));
  const std::int64_t mine = d.rank + 1, none = 0;
  std::int64_t found = 0;
  if (MPI_Compare_and_swap(&mine, &none, &found, MPI_INT64_T, manager, slot, d.directory) !=
          MPI_SUCCESS ||
      MPI_Win_flush(manager, d.directory) != MPI_SUCCESS)
    mpi_failed("the directory's compare-and-swap");
  const int h = found == 0 ? d.rank : static_cast<int>(found - 1);
  d.home_plus1[page] = h + 1;
  return h;
}

void fetch(dsm& d, std::size_t page, int from) {
  const auto at = static_cast<MPI_Aint>(page * page_bytes);
  if (MPI_Get(d.alias + page * page_bytes, page_bytes, MPI_BYTE, from, at, page_bytes, MPI_BYTE,
              d.data) != MPI_SUCCESS ||
      MPI_Win_flush(from, d.data) != MPI_SUCCESS)
    mpi_failed("fetching a page from its home");
}

void list_shared(dsm& d, std::size_t page) {
  if (d.listed[page]) return;
  d.listed[page] = 1;
  d.shared_list[d.shared_count++] = page;
}

// Makes a non-home page writable with a twin of what it holds now.
void make_modified(dsm& d, std::size_t page, std::uint8_t how) {
  std::memcpy(d.twins + page * page_bytes, d.alias + page * page_bytes, page_bytes);
  protect(d, page, PROT_READ | PROT_WRITE);
  d.state[page] = how;
  d.modified_list[d.modified_count++] = page;
}

// A fault on `page` (write: a store), with d.lock held. Another thread may
// have served the same page meanwhile: then there is nothing left to do.
void serve_fault(dsm& d, std::size_t page, bool write) {
  const std::uint8_t s = d.state[page];
  if (s == home || s == modified || s == pinned) return;
  if (s == shared && !write) return;
  const int h = home_of(d, page);
  if (h == d.rank) {
    protect(d, page, PROT_READ | PROT_WRITE);
    d.state[page] = home;
    return;
  }
  if (s == invalid) fetch(d, page, h);
  if (write) {
    make_modified(d, page, modified);
  } else {
    protect(d, page, PROT_READ);
    d.state[page] = shared;
    list_shared(d, page);
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

// Sends page's changes against its twin to its home: exactly the bytes that
// differ (a word-wide run would carry stale neighbours over bytes another
// rank wrote), skipping equal words a word at a time.
void send_diff(dsm& d, std::size_t page) {
  const char* now = d.alias + page * page_bytes;
  const char* twin = d.twins + page * page_bytes;
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
  if (runs == 0) return;
  const int h = home_of(d, page);
  const auto at = static_cast<MPI_Aint>(page * page_bytes);
  if (d.check_races) {
    if (MPI_Get(d.master, page_bytes, MPI_BYTE, h, at, page_bytes, MPI_BYTE, d.data) != MPI_SUCCESS ||
        MPI_Win_flush(h, d.data) != MPI_SUCCESS)
      mpi_failed("reading a page back from its home");
    report_races(d.rank, h, view_of(d, page), now, twin, d.master, page_bytes);
  }
  if (runs == 1) {  // one stretch of bytes (the usual case): no type to build
    if (MPI_Put(now + d.run_at[0], d.run_length[0], MPI_BYTE, h, at + d.run_at[0], d.run_length[0],
                MPI_BYTE, d.data) != MPI_SUCCESS)
      mpi_failed("sending a diff to its home");
    return;
  }
  // One put per page, its runs described by an indexed type on both sides:
  // a put per run (up to 2048 for interleaved writers) costs a round of
  // bookkeeping each, and MPICH 4.0 over UCX's shared-memory transports lost
  // some of a thousand outstanding one-byte puts here (tests/dist merge test).
  MPI_Datatype runs_type;
  if (MPI_Type_indexed(runs, d.run_length, d.run_at, MPI_BYTE, &runs_type) != MPI_SUCCESS ||
      MPI_Type_commit(&runs_type) != MPI_SUCCESS)
    mpi_failed("describing a diff");
  if (MPI_Put(now, 1, runs_type, h, at, 1, runs_type, d.data) != MPI_SUCCESS)
    mpi_failed("sending a diff to its home");
  MPI_Type_free(&runs_type);  // MPI keeps it alive until the put completes
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

void start_dsm(dist_state& st) {
  auto* d = new dsm;
  d->view = st.region.view;
  d->alias = st.region.alias;
  d->region_pages = st.region.bytes / page_bytes;
  d->globals = st.region.globals;
  d->pages = d->region_pages + st.region.globals_bytes / page_bytes;
  d->rank = st.rank;
  d->ranks = st.size;
  d->check_races = st.check_races;
  d->entry_count = (d->pages + static_cast<std::size_t>(d->ranks) - 1) / static_cast<std::size_t>(d->ranks);
  d->entries = reserve_array<std::int64_t>(d->entry_count);
  d->state = reserve_array<std::uint8_t>(d->pages);
  d->home_plus1 = reserve_array<std::int32_t>(d->pages);
  d->twins = reserve_array<char>(d->pages * page_bytes);
  d->shared_list = reserve_array<std::size_t>(d->pages);
  d->listed = reserve_array<std::uint8_t>(d->pages);
  d->modified_list = reserve_array<std::size_t>(d->pages);
  if (MPI_Win_create(d->alias, static_cast<MPI_Aint>(st.region.bytes + st.region.globals_bytes), 1,
                     MPI_INFO_NULL,
                     MPI_COMM_WORLD, &d->data) != MPI_SUCCESS ||
      MPI_Win_create(d->entries, static_cast<MPI_Aint>(d->entry_count * sizeof(std::int64_t)),
                     sizeof(std::int64_t), MPI_INFO_NULL, MPI_COMM_WORLD,
                     &d->directory) != MPI_SUCCESS ||
      MPI_Win_lock_all(MPI_MODE_NOCHECK, d->data) != MPI_SUCCESS ||
      MPI_Win_lock_all(MPI_MODE_NOCHECK, d->directory) != MPI_SUCCESS)
    mpi_failed("creating the DSM's windows");
  // After MPI_Init, which installs a SIGSEGV handler of its own: ours serves
  // the region and hands every other fault to it.
  struct sigaction sa {};
  sa.sa_sigaction = &on_fault;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  g_dsm.store(d, std::memory_order_release);
  sigaction(SIGSEGV, &sa, &d->previous);
}

void stop_dsm(dist_state& st) noexcept {
  dsm* d = g_dsm.load(std::memory_order_acquire);
  if (!d) return;
  MPI_Barrier(MPI_COMM_WORLD);
  sigaction(SIGSEGV, &d->previous, nullptr);
  g_dsm.store(nullptr, std::memory_order_release);
  MPI_Win_unlock_all(d->data);
  MPI_Win_unlock_all(d->directory);
  MPI_Win_free(&d->data);
  MPI_Win_free(&d->directory);
  release_array(d->entries, d->entry_count);
  release_array(d->state, d->pages);
  release_array(d->home_plus1, d->pages);
  release_array(d->twins, d->pages * page_bytes);
  release_array(d->shared_list, d->pages);
  release_array(d->listed, d->pages);
  release_array(d->modified_list, d->pages);
  mprotect(st.region.view, st.region.bytes, PROT_NONE);
  delete d;
}

void sd_fence() {
  dsm& d = require_dsm("sd_fence");
  std::lock_guard hold(d.lock);
  std::size_t kept = 0;
  for (std::size_t k = 0; k < d.modified_count; ++k) {
    const std::size_t page = d.modified_list[k];
    const bool keep = d.state[page] == pinned;
    // Read-only before the diff: a store from another thread of this rank
    // meanwhile faults, waits for the lock, and takes a fresh twin after.
    if (!keep) protect(d, page, PROT_READ);
    send_diff(d, page);
    if (keep) {
      std::memcpy(d.twins + page * page_bytes, d.alias + page * page_bytes, page_bytes);
      d.modified_list[kept++] = page;
    } else {
      d.state[page] = shared;
      list_shared(d, page);
      madvise(d.twins + page * page_bytes, page_bytes, MADV_DONTNEED);
    }
  }
  d.modified_count = kept;
  if (MPI_Win_flush_all(d.data) != MPI_SUCCESS) mpi_failed("completing the diffs");
}

void si_fence() {
  dsm& d = require_dsm("si_fence");
  std::lock_guard hold(d.lock);
  for (std::size_t k = 0; k < d.shared_count; ++k) {
    const std::size_t page = d.shared_list[k];
    d.listed[page] = 0;
    if (d.state[page] != shared) continue;  // written since: on the modified list now
    protect(d, page, PROT_NONE);
    d.state[page] = invalid;
  }
  d.shared_count = 0;
}

void release_and_invalidate() {
  dsm& d = require_dsm("release_and_invalidate");
  std::lock_guard hold(d.lock);
  std::size_t kept = 0;
  for (std::size_t k = 0; k < d.modified_count; ++k) {
    const std::size_t page = d.modified_list[k];
    const bool keep = d.state[page] == pinned;
    // No access before the diff: a store from another thread of this rank
    // meanwhile faults, waits for the lock, and then fetches the master.
    if (!keep) protect(d, page, PROT_NONE);
    send_diff(d, page);
    if (keep) {
      std::memcpy(d.twins + page * page_bytes, d.alias + page * page_bytes, page_bytes);
      d.modified_list[kept++] = page;
    } else {
      d.state[page] = invalid;
      madvise(d.twins + page * page_bytes, page_bytes, MADV_DONTNEED);
    }
  }
  d.modified_count = kept;
  if (MPI_Win_flush_all(d.data) != MPI_SUCCESS) mpi_failed("completing the diffs");
  for (std::size_t k = 0; k < d.shared_count; ++k) {
    const std::size_t page = d.shared_list[k];
    d.listed[page] = 0;
    if (d.state[page] != shared) continue;
    protect(d, page, PROT_NONE);
    d.state[page] = invalid;
  }
  d.shared_count = 0;
}

void pin(void* p, std::size_t bytes) {
  dsm& d = require_dsm("pin");
  std::size_t first = 0, last = 0;
  page_range(d, p, bytes, "pin", &first, &last);
  std::lock_guard hold(d.lock);
  for (std::size_t page = first; page <= last; ++page) {
    serve_fault(d, page, false);  // fetched (or ours, if we are its home)
    if (d.state[page] == shared) make_modified(d, page, pinned);
    else if (d.state[page] == modified) d.state[page] = pinned;
  }
}

void unpin(void* p, std::size_t bytes) {
  dsm& d = require_dsm("unpin");
  std::size_t first = 0, last = 0;
  page_range(d, p, bytes, "unpin", &first, &last);
  std::lock_guard hold(d.lock);
  for (std::size_t page = first; page <= last; ++page)
    if (d.state[page] == pinned) d.state[page] = modified;
}

}  // namespace ito::dist::detail

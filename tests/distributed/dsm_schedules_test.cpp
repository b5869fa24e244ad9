// SPDX-License-Identifier: Apache-2.0
// The DSM protocol over thousands of seeded random schedules, without MPI
// (docs/DISTRIBUTED.md, "Testing the protocol without mpiexec"): N ranks in
// one process and one thread, each a struct dsm with its own view, alias and
// node alias, over the in-process transport (transport_inproc.hpp). Each rank
// runs a random data-race-free script (stores to bytes it alone writes in the
// interval, reads of bytes nobody else writes in it, pins, checkouts to read,
// write or both, and their unpins, kept across barriers), then a barrier
// (every rank releases, by sd_fence or release_and_invalidate, may store to
// bytes it owns in this interval and the next, then acquires: a merge);
// after each barrier every rank's
// view must equal a sequential model. Accesses are real loads and stores into
// the rank's view: one that faults is served as the fault handler does
// (serve_fault) and tried again. A rank waiting in the transport (a flush, its
// mail) lets other ranks take steps meanwhile, and queued one-sided operations
// are applied at random points. After each step every rank outside a room
// must have each page's protection as its state says and its home where
// its state says, every room must leave nothing queued, and no pinned page
// may fault.
//
// ITO_DSM_SCHEDULES=<n>: how many schedules (default 2000);
// ITO_DSM_SCHEDULE_SEED=<seed>: that one schedule only (what a failure prints).
#include <gtest/gtest.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "distributed/dsm/acquire.hpp"
#include "distributed/dsm/diff_mail.hpp"
#include "distributed/dsm/directory.hpp"
#include "distributed/dsm/dsm.hpp"
#include "distributed/dsm/dsm_bookkeeping.hpp"
#include "distributed/dsm/fault.hpp"
#include "distributed/dsm/node_layout.hpp"
#include "distributed/dsm/release.hpp"
#include "distributed/dsm/transport.hpp"
#include "distributed/dsm/transport_inproc.hpp"
#include "distributed/node_memory.hpp"

namespace {

using namespace ito::dist::detail;
namespace inproc = ito::dist::detail::transport::inproc;

// --- the views' protections, as the rooms set them (mprotect and mmap are
// wrapped at link time: -Wl,--wrap) ---

struct view_area {
  char* base = nullptr;
  std::size_t pages = 0;
  std::vector<int> prot;
};
std::vector<view_area> g_areas;  // one per simulated rank

void record_protection(const void* at, std::size_t bytes, int prot) {
  const char* a = static_cast<const char*>(at);
  for (view_area& v : g_areas) {
    if (!v.base || a + bytes <= v.base || a >= v.base + v.pages * page_bytes) continue;
    for (std::size_t p = 0; p < v.pages; ++p) {
      const char* page = v.base + p * page_bytes;
      if (page >= a && page < a + bytes) v.prot[p] = prot;
    }
  }
}

}  // namespace

extern "C" {
int __real_mprotect(void* at, std::size_t bytes, int prot);
void* __real_mmap(void* at, std::size_t bytes, int prot, int flags, int fd, off_t offset);
int __wrap_mprotect(void* at, std::size_t bytes, int prot) {
  const int rc = __real_mprotect(at, bytes, prot);
  if (rc == 0) record_protection(at, bytes, prot);
  return rc;
}
void* __wrap_mmap(void* at, std::size_t bytes, int prot, int flags, int fd, off_t offset) {
  void* p = __real_mmap(at, bytes, prot, flags, fd, offset);
  if (p != MAP_FAILED) record_protection(p, bytes, prot);
  return p;
}
}

namespace {

// --- real accesses, a fault caught and reported instead of served ---

sigjmp_buf g_jump;
volatile sig_atomic_t g_armed = 0;

void on_segv(int, siginfo_t*, void*) {
  if (g_armed) {
    g_armed = 0;
    siglongjmp(g_jump, 1);
  }
  signal(SIGSEGV, SIG_DFL);  // not ours: crash as without the test
}

[[gnu::noinline]] bool try_access(volatile char* at, bool write, unsigned char* value) {
  if (sigsetjmp(g_jump, 0) != 0) return false;
  g_armed = 1;
  if (write) *at = static_cast<char>(*value);
  else *value = static_cast<unsigned char>(*at);
  g_armed = 0;
  return true;
}

// --- one schedule ---

constexpr std::size_t slot_offsets[] = {0, 1, 2, 7, 8, 9, 63, 64, 1000, 2047, 2048, 4088, 4095};
constexpr std::size_t slots = std::size(slot_offsets);

enum class act : std::uint8_t {
  store,
  load,
  early_store,     // between its release and its acquire: a byte it owns in
                   // this interval and the next (another thread of the rank
                   // writing on); acquire's merge must keep it
  pin,             // pages [page, page + count)
  check_out,       // the same, `how`; a write checkout covers no page whole
  unpin,           // undoes a pin or checkout of [page, page + count)
  release,
  release_and_invalidate,
  acquire,
  done
};

struct action {
  act what;
  std::size_t page = 0, slot = 0;  // slot: the page count of a pin or checkout
  unsigned char value = 0;
  ito::dist::access how = ito::dist::access::read;
  std::size_t id = 0;  // a pin or checkout's, and the unpin's that undoes it
};

struct held_range {
  std::size_t page, count, id;
  bool read_only;  // a checkout to read: the rank does not store there
};

struct sim_rank {
  std::unique_ptr<dsm> d;
  int own_fd = -1;
  char* view = nullptr;
  char* alias = nullptr;
  char* node_alias = nullptr;
  std::size_t reserved = 0;  // each alias's bytes, pages then sharing words
  std::vector<action> script;
  std::size_t next = 0;
  int busy = 0;  // inside a room (a step not finished)
  std::vector<int> stored;  // this interval's value per (page, slot), -1 none
  std::vector<int> early;   // the next interval's, stored before this barrier's acquire
  std::vector<held_range> held;  // pins and checkouts not undone, as scripted so far
};

struct schedule;
schedule* g_schedule = nullptr;
bool progress_for_mail() noexcept;

struct schedule {
  std::uint64_t seed;
  std::mt19937_64 random;
  int ranks = 2;
  bool pairs = false;
  std::size_t pages = 4;
  std::size_t block = 1;
  bool mail = false;
  int depth = 0, most_depth = 3;
  unsigned nest_per_1024 = 256;
  bool nesting = true;
  std::vector<int> node_of;
  std::vector<int> node_fd;
  std::vector<sim_rank> r;
  std::vector<unsigned char> model;  // every page's bytes as of the last barrier
  std::vector<int> owner;            // this interval's writer per (page, slot), -1 none
  std::vector<int> owner_next;       // the next interval's
  int released = 0, acquired = 0;
  std::size_t ids = 0;
  std::size_t steps = 0;
  std::vector<std::string> log;  // the last steps, printed on failure

  explicit schedule(std::uint64_t s) : seed(s), random(s * 0x9e3779b97f4a7c15ull + 1) {}

  std::uint64_t pick(std::uint64_t n) { return random() % n; }

  void note(const char* format, ...) __attribute__((format(printf, 2, 3))) {
    char line[200];
    va_list args;
    va_start(args, format);
    std::vsnprintf(line, sizeof line, format, args);
    va_end(args);
    if (log.size() == 40) log.erase(log.begin());
    log.emplace_back(line);
  }

  [[noreturn]] void fail(const char* format, ...) __attribute__((format(printf, 2, 3))) {
    char line[300];
    va_list args;
    va_start(args, format);
    std::vsnprintf(line, sizeof line, format, args);
    va_end(args);
    std::fprintf(stderr,
                 "dsm_schedules: schedule seed %llu failed at step %zu (%d ranks, %s, %zu pages, "
                 "block %zu, diffs by %s): %s\nits last steps:\n",
                 static_cast<unsigned long long>(seed), steps, ranks,
                 pairs ? "nodes of two ranks" : "a node per rank", pages, block,
                 mail ? "mail" : "put", line);
    for (const auto& l : log) std::fprintf(stderr, "  %s\n", l.c_str());
    std::fprintf(stderr, "replay: ITO_DSM_SCHEDULE_SEED=%llu\n",
                 static_cast<unsigned long long>(seed));
    std::abort();
  }

  void enter(int k) {
    inproc::set_rank(k);
    g_dsm.store(r[static_cast<std::size_t>(k)].d.get(), std::memory_order_relaxed);
  }

  // --- set up and take down ---

  void build() {
    ranks = 2 + static_cast<int>(pick(3));
    pairs = ranks > 2 && pick(2);
    pages = 2 + pick(5);
    block = pick(3) == 0 ? 2 : 1;
    mail = pick(2);
    inproc::reset(ranks, random());
    inproc::set_eagerness(static_cast<unsigned>(pick(4) * 256));
    nest_per_1024 = static_cast<unsigned>(pick(3) * 384);
    const int nodes = pairs ? (ranks + 1) / 2 : ranks;
    node_of.resize(static_cast<std::size_t>(ranks));
    for (int k = 0; k < ranks; ++k) node_of[static_cast<std::size_t>(k)] = pairs ? k / 2 : k;
    const std::size_t bytes = pages * page_bytes;
    const std::size_t readers_bytes = readers_words_for(pages) * 8;
    const std::size_t tail = sharing_words_for(pages) * 8;
    node_fd.assign(static_cast<std::size_t>(nodes), -1);
    if (pairs) {
      for (int& fd : node_fd) {
        fd = memfd_create("dsm-node", 0);
        if (fd < 0 || ftruncate(fd, static_cast<off_t>(bytes + readers_bytes)) != 0) fail("memfd");
      }
    }
    r.resize(static_cast<std::size_t>(ranks));
    g_areas.assign(static_cast<std::size_t>(ranks), {});
    auto map_alias = [&](int fd) {
      auto* at = static_cast<char*>(mmap(nullptr, bytes + tail, PROT_NONE,
                                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0));
      if (at == MAP_FAILED ||
          mmap(at, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED)
        fail("mapping an alias");
      return at;
    };
    for (int k = 0; k < ranks; ++k) {
      sim_rank& s = r[static_cast<std::size_t>(k)];
      s.own_fd = memfd_create("dsm-rank", 0);
      if (s.own_fd < 0 || ftruncate(s.own_fd, static_cast<off_t>(bytes)) != 0) fail("memfd");
      view_area& area = g_areas[static_cast<std::size_t>(k)];
      area.pages = pages;
      area.prot.assign(pages, PROT_NONE);
      s.view = static_cast<char*>(mmap(nullptr, bytes, PROT_NONE, MAP_SHARED, s.own_fd, 0));
      if (s.view == MAP_FAILED) fail("mapping a view");
      area.base = s.view;
      s.alias = map_alias(s.own_fd);
      const int nfd = pairs ? node_fd[static_cast<std::size_t>(node_of[static_cast<std::size_t>(k)])] : s.own_fd;
      s.node_alias = pairs ? map_alias(nfd) : s.alias;
      s.reserved = bytes + tail;
      s.d = std::make_unique<dsm>();
      dsm& d = *s.d;
      d.view = s.view;
      d.alias = s.alias;
      d.node_alias = s.node_alias;
      d.node_fd = nfd;
      d.node = node_of[static_cast<std::size_t>(k)];
      d.node_of_rank = node_of;
      d.ranks_of_node.resize(static_cast<std::size_t>(nodes));
      for (int j = 0; j < ranks; ++j)
        d.ranks_of_node[static_cast<std::size_t>(node_of[static_cast<std::size_t>(j)])].push_back(j);
      d.node_homes = pairs;
      d.pages = d.region_pages = pages;
      d.rank = k;
      d.ranks = ranks;
      d.fault_block_pages = block;
      d.sharing_at = bytes;
      d.sharing_words = reinterpret_cast<std::uint64_t*>(s.node_alias + bytes);
      reserve_bookkeeping(d);
      if (mmap(d.sharing_words, tail, PROT_READ | PROT_WRITE,
               MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED ||
          (pairs && mmap(d.sharing_words, readers_bytes, PROT_READ | PROT_WRITE,
                         MAP_SHARED | MAP_FIXED, nfd, static_cast<off_t>(bytes)) == MAP_FAILED))
        fail("mapping the sharing words");
      enter(k);
      if (!transport::open_windows(s.node_alias, d.sharing_at + d.sharing_count * 8, d.entries,
                                   d.entry_count))
        fail("open_windows");
      start_diff_mail(d, s.node_alias, bytes, &progress_for_mail);
      s.stored.assign(pages * slots, -1);
      s.early.assign(pages * slots, -1);
    }
    model.assign(pages * page_bytes, 0);
    owner.assign(pages * slots, -1);
    owner_next.assign(pages * slots, -1);
    draw_owners(owner_next);
  }

  ~schedule() {
    for (std::size_t k = 0; k < r.size(); ++k) {
      sim_rank& s = r[k];
      if (!s.d) continue;
      enter(static_cast<int>(k));
      stop_diff_mail(*s.d);
      transport::close_windows();
      release_bookkeeping(*s.d);
      munmap(s.view, pages * page_bytes);
      if (s.node_alias != s.alias) munmap(s.node_alias, s.reserved);
      munmap(s.alias, s.reserved);
      close(s.own_fd);
    }
    for (int fd : node_fd)
      if (fd >= 0) close(fd);
    g_areas.clear();
    g_dsm.store(nullptr, std::memory_order_relaxed);
  }

  // --- scripts ---

  void draw_owners(std::vector<int>& o) {
    for (int& x : o) x = pick(5) < 2 ? static_cast<int>(pick(static_cast<std::uint64_t>(ranks))) : -1;
  }

  void new_interval() {
    owner.swap(owner_next);
    draw_owners(owner_next);
    for (int k = 0; k < ranks; ++k) {
      sim_rank& s = r[static_cast<std::size_t>(k)];
      s.script.clear();
      s.next = 0;
      s.stored.swap(s.early);  // stored early: this interval's
      std::fill(s.early.begin(), s.early.end(), -1);
      const std::size_t n = pick(9);
      auto read_only = [&](std::size_t page) {
        for (const held_range& h : s.held)
          if (h.read_only && page >= h.page && page < h.page + h.count) return true;
        return false;
      };
      for (std::size_t i = 0; i < n; ++i) {
        if (pick(8) == 0) {  // a pin or a checkout, or one undone
          if (!s.held.empty() && pick(2)) {
            const std::size_t x = pick(s.held.size());
            s.script.push_back({act::unpin, s.held[x].page, s.held[x].count, 0,
                                ito::dist::access::read, s.held[x].id});
            s.held.erase(s.held.begin() + static_cast<std::ptrdiff_t>(x));
            continue;
          }
          const std::size_t first = pick(pages), count = first + 1 < pages ? 1 + pick(2) : 1;
          const std::uint64_t kind = pick(4);
          const auto how = kind == 1 ? ito::dist::access::read
                           : kind == 2 ? ito::dist::access::read_write
                                       : ito::dist::access::write;
          s.script.push_back({kind == 0 ? act::pin : act::check_out, first, count, 0, how, ++ids});
          s.held.push_back({first, count, ids, kind == 1});
          continue;
        }
        const std::size_t page = pick(pages), slot = pick(slots);
        const int o = owner[page * slots + slot];
        if (o == k && pick(3) != 0 && !read_only(page))
          s.script.push_back({act::store, page, slot, static_cast<unsigned char>(1 + pick(255))});
        else if (o == -1 || o == k)
          s.script.push_back({act::load, page, slot, 0});
      }
      s.script.push_back({pick(3) == 0 ? act::release_and_invalidate : act::release});
      for (std::size_t i = pick(4); i > 0; --i) {
        const std::size_t page = pick(pages), slot = pick(slots);
        const std::size_t x = page * slots + slot;
        if (owner[x] == k && owner_next[x] == k && !read_only(page))
          s.script.push_back({act::early_store, page, slot, static_cast<unsigned char>(1 + pick(255))});
      }
      s.script.push_back({act::acquire});
      s.script.push_back({act::done});
    }
    released = acquired = 0;
  }

  bool runnable(int k) {
    const sim_rank& s = r[static_cast<std::size_t>(k)];
    if (s.busy) return false;
    const act what = s.script[s.next].what;
    if (what == act::done) return false;
    return what != act::acquire || released == ranks;
  }

  // --- steps ---

  // A load or store in k's view, its faults served.
  void access(int k, std::size_t page, std::size_t slot, bool write, unsigned char* value) {
    sim_rank& s = r[static_cast<std::size_t>(k)];
    volatile char* at = s.view + page * page_bytes + slot_offsets[slot];
    for (int tries = 0; tries < 3; ++tries) {
      if (try_access(at, write, value)) return;
      note("rank %d: %s fault on page %zu (state %d)", k, write ? "write" : "read", page,
           s.d->state.of(page));
      if (s.d->pins[page]) fail("rank %d: a fault on pinned page %zu", k, page);
      ++s.busy;
      enter(k);
      {
        std::lock_guard hold(s.d->lock);
        serve_fault(*s.d, page, write);
      }
      --s.busy;
      after_room(k);
    }
    fail("rank %d: page %zu still faults (%s) after its fault was served", k, page,
         write ? "write" : "read");
  }

  void after_room(int k) {
    if (inproc::queued_by(k) != 0)
      fail("rank %d left %zu operations incomplete", k, inproc::queued_by(k));
    check_states();
  }

  // Every rank outside a room: each page's protection is what its state says.
  void check_states() {
    for (int k = 0; k < ranks; ++k) {
      const sim_rank& s = r[static_cast<std::size_t>(k)];
      if (s.busy) continue;
      const dsm& d = *s.d;
      for (std::size_t p = 0; p < pages; ++p) {
        const page_state st = d.state.of(p);
        int want = PROT_NONE;
        switch (st) {
          case invalid: want = PROT_NONE; break;
          case shared: case home_watched: case home_read: want = PROT_READ; break;
          default: want = PROT_READ | PROT_WRITE;
        }
        const int have = g_areas[static_cast<std::size_t>(k)].prot[p];
        if (have != want)
          fail("rank %d: page %zu is in state %d with protection %d (want %d)", k, p, st, have,
               want);
        if (st == invalid) continue;
        const int h = d.home_plus1[p] - 1;
        if (h < 0) fail("rank %d: page %zu in state %d has no home", k, p, st);
        const bool home_state = st >= home;
        if (home_state != on_this_node(d, h))
          fail("rank %d: page %zu in state %d, homed on rank %d", k, p, st, h);
      }
    }
  }

  void step(int k) {
    sim_rank& s = r[static_cast<std::size_t>(k)];
    const action a = s.script[s.next];
    ++steps;
    switch (a.what) {
      case act::store: {
        unsigned char v = a.value;
        note("rank %d: store %u at page %zu + %zu", k, v, a.page, slot_offsets[a.slot]);
        ++s.next;
        access(k, a.page, a.slot, true, &v);
        s.stored[a.page * slots + a.slot] = v;
        break;
      }
      case act::early_store: {
        unsigned char v = a.value;
        note("rank %d: store %u at page %zu + %zu before its acquire", k, v, a.page,
             slot_offsets[a.slot]);
        ++s.next;
        access(k, a.page, a.slot, true, &v);
        s.early[a.page * slots + a.slot] = v;
        break;
      }
      case act::load: {
        unsigned char v = 0;
        ++s.next;
        access(k, a.page, a.slot, false, &v);
        const int mine = s.stored[a.page * slots + a.slot];
        const unsigned want = mine >= 0 ? static_cast<unsigned>(mine)
                                        : model[a.page * page_bytes + slot_offsets[a.slot]];
        note("rank %d: load %u at page %zu + %zu", k, v, a.page, slot_offsets[a.slot]);
        if (v != want)
          fail("rank %d read %u at page %zu + %zu, not %u", k, v, a.page, slot_offsets[a.slot],
               want);
        break;
      }
      case act::pin:
      case act::check_out:
      case act::unpin: {
        static const char* const hows[] = {"read", "write", "read_write"};
        note("rank %d: %s pages %zu..%zu%s%s", k,
             a.what == act::pin ? "pin" : a.what == act::unpin ? "unpin" : "check out", a.page,
             a.page + a.slot - 1, a.what == act::check_out ? " to " : "",
             a.what == act::check_out ? hows[static_cast<int>(a.how)] : "");
        ++s.next;
        ++s.busy;
        enter(k);
        char* first = s.view + a.page * page_bytes;
        const std::size_t bytes = a.slot * page_bytes;
        if (a.what == act::pin) pin(first, bytes);
        else if (a.what == act::unpin) unpin(first, bytes);
        else if (a.how == ito::dist::access::write) check_out_pages(first + 1, bytes - 2, a.how);
        else check_out_pages(first, bytes, a.how);
        --s.busy;
        after_room(k);
        break;
      }
      case act::release:
      case act::release_and_invalidate:
        note("rank %d: %s", k, a.what == act::release ? "release" : "release_and_invalidate");
        ++s.next;
        ++s.busy;
        enter(k);
        if (a.what == act::release) sd_fence();
        else release_and_invalidate();
        --s.busy;
        ++released;
        after_room(k);
        break;
      case act::acquire:
        note("rank %d: acquire", k);
        ++s.next;
        ++s.busy;
        enter(k);
        si_fence();
        --s.busy;
        ++acquired;
        after_room(k);
        break;
      case act::done:
        break;
    }
  }

  // A rank waits in the transport: others may step meanwhile.
  void yield() {
    // Mail first when some waits: a home's progress thread applies it
    // whatever its rank is doing.
    for (int tries = 0; tries < 2; ++tries) {
      if (pick(4) == 0) inproc::apply_one();
      std::vector<int> with_mail;
      for (int k = 0; k < ranks; ++k)
        if (inproc::mail_waiting(k)) with_mail.push_back(k);
      if (!with_mail.empty() && pick(2) == 0) {
        const int k = with_mail[pick(with_mail.size())];
        note("rank %d: receives its mail", k);
        enter(k);
        serve_diffs(*r[static_cast<std::size_t>(k)].d);
        continue;
      }
      if (!nesting || depth >= most_depth || pick(1024) >= nest_per_1024) continue;
      std::vector<int> ready;
      for (int k = 0; k < ranks; ++k)
        if (runnable(k)) ready.push_back(k);
      if (ready.empty()) continue;
      ++depth;
      step(ready[pick(ready.size())]);
      --depth;
    }
  }

  // Every rank's view against the model (a reader after the barrier).
  void check_views(bool all) {
    for (int k = 0; k < ranks; ++k) {
      for (std::size_t p = 0; p < pages; ++p) {
        if (!all && pick(2)) continue;
        for (std::size_t slot = 0; slot < slots; ++slot) {
          // A byte another rank stored before its acquire is the next
          // interval's, that rank's alone; its own store it reads back.
          const std::size_t x = p * slots + slot;
          int early = -1;
          bool others = false;
          for (int j = 0; j < ranks; ++j) {
            const int e = r[static_cast<std::size_t>(j)].early[x];
            if (e >= 0 && j == k) early = e;
            if (e >= 0 && j != k) others = true;
          }
          if (others) continue;
          unsigned char v = 0;
          access(k, p, slot, false, &v);
          const unsigned want =
              early >= 0 ? static_cast<unsigned>(early) : model[p * page_bytes + slot_offsets[slot]];
          if (v != want)
            fail("after the barrier rank %d read %u at page %zu + %zu, not %u", k, v, p,
                 slot_offsets[slot], want);
        }
      }
    }
  }

  void run() {
    build();
    inproc::set_yield([](void* self) { static_cast<schedule*>(self)->yield(); }, this);
    const std::size_t intervals = 2 + pick(5);
    for (std::size_t i = 0; i < intervals; ++i) {
      new_interval();
      note("interval %zu", i);
      for (;;) {
        std::vector<int> ready;
        for (int k = 0; k < ranks; ++k)
          if (runnable(k)) ready.push_back(k);
        if (ready.empty()) break;
        step(ready[pick(ready.size())]);
      }
      if (acquired != ranks) fail("the barrier did not complete");
      for (int k = 0; k < ranks; ++k) {
        const sim_rank& s = r[static_cast<std::size_t>(k)];
        for (std::size_t x = 0; x < pages * slots; ++x)
          if (s.stored[x] >= 0)
            model[x / slots * page_bytes + slot_offsets[x % slots]] =
                static_cast<unsigned char>(s.stored[x]);
      }
      nesting = false;
      check_views(i + 1 == intervals);
      nesting = true;
    }
    inproc::set_yield(nullptr, nullptr);
  }
};

bool progress_for_mail() noexcept { return g_schedule && g_schedule->mail; }

std::uint64_t env_number(const char* name, std::uint64_t otherwise) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoull(v, nullptr, 10) : otherwise;
}

TEST(DsmSchedules, RandomSchedulesMatchTheSequentialModel) {
  struct sigaction sa {};
  sa.sa_sigaction = &on_segv;
  sa.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  struct sigaction previous {};
  ASSERT_EQ(sigaction(SIGSEGV, &sa, &previous), 0);
  const std::uint64_t only = env_number("ITO_DSM_SCHEDULE_SEED", 0);
  const std::uint64_t count = only ? 1 : env_number("ITO_DSM_SCHEDULES", 2000);
  const auto start = std::chrono::steady_clock::now();
  std::size_t steps = 0;
  for (std::uint64_t i = 0; i < count; ++i) {
    schedule s(only ? only : i + 1);
    g_schedule = &s;
    s.run();
    steps += s.steps;
    g_schedule = nullptr;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("dsm_schedules: %llu schedules, %zu steps in %.2f s (%.0f schedules/s)\n",
              static_cast<unsigned long long>(count), steps, seconds,
              static_cast<double>(count) / seconds);
  sigaction(SIGSEGV, &previous, nullptr);
}

}  // namespace

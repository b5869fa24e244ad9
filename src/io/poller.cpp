// SPDX-License-Identifier: Apache-2.0
#include "io/poller.hpp"

#include <poll.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "io/errno_now.hpp"
#include "io/fairness.hpp"
#include "io/fork_child.hpp"
#include "os/futex.hpp"
#include "io/os_thread.hpp"
#include "sched/deadlock.hpp"
#include "sched/idle.hpp"
#include "sched/scheduler.hpp"

namespace ito::detail {

// A parked ULT's record, on its own stack; linked in its entry's list.
struct fd_waiter {
  // closed: io::close ended the generation the call began under.
  enum class phase : std::uint8_t { idle, linked, woken, timed_out, closed };

  sched::ult* self = nullptr;
  fd_state* fd = nullptr;
  std::uint32_t generation = 0;  // of the registration the call began under
  std::uint32_t interest = 0;
  std::int64_t in_edges_seen = -1;  // see park_until_ready
  phase state = phase::idle;  // guarded by fd->lock
  fd_waiter* next = nullptr;
  fd_waiter* prev = nullptr;
};

namespace {

constexpr int batch = 256;  // events per epoll_wait

int g_epoll_fd = -1;

void link(fd_state& st, fd_waiter* w) {  // with st.lock held
  w->prev = nullptr;
  w->next = st.waiters;
  if (st.waiters) st.waiters->prev = w;
  st.waiters = w;
  w->state = fd_waiter::phase::linked;
}

void unlink(fd_state& st, fd_waiter* w) {  // with st.lock held
  if (w->prev) w->prev->next = w->next;
  else st.waiters = w->next;
  if (w->next) w->next->prev = w->prev;
  w->next = w->prev = nullptr;
}

// Wakes a list of records already unlinked (chained by `next`). A record may
// be gone once released: read the link first.
void wake_list(fd_waiter* w) noexcept {
  while (w) {
    fd_waiter* next = w->next;
    sched::make_ready(w->self);
    w = next;
  }
}

// A call whose descriptor io::close ended.
int fail_closed() noexcept {
  errno_now() = EBADF;
  return -1;
}

std::uint32_t directions(std::uint32_t events) {
  std::uint32_t d = 0;
  // Errors and hang-ups wake both directions: the retried call reports them.
  if (events & (EPOLLIN | EPOLLPRI | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) d |= ready_in;
  if (events & (EPOLLOUT | EPOLLHUP | EPOLLERR)) d |= ready_out;
  return d;
}

void deliver(fd_state& st, std::uint32_t events) {
  const std::uint32_t ready = directions(events);
  fd_waiter* woken = nullptr;
  std::uint32_t taken = 0;
  st.lock.lock();
  for (fd_waiter* w = st.waiters; w;) {
    fd_waiter* next = w->next;
    if (w->interest & ready) {
      unlink(st, w);
      w->state = fd_waiter::phase::woken;
      w->next = woken;
      woken = w;
      taken |= w->interest & ready;
    }
    w = next;
  }
  // An edge nobody was waiting for is kept for the next ULT to park here.
  st.ready |= ready & ~taken;
  if ((events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) && !st.hung_up.load(std::memory_order_relaxed))
    st.hung_up.store(true, std::memory_order_release);
  if (ready & ready_in)
    st.in_edges.store(st.in_edges.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  st.lock.unlock();
  wake_list(woken);
}

// Harvests ready events and wakes their ULTs; returns how many events.
int harvest(epoll_event* events, int timeout_ms) {
  const int n = epoll_wait(g_epoll_fd, events, batch, timeout_ms);
  for (int i = 0; i < n; ++i)
    deliver(*static_cast<fd_state*>(events[i].data.ptr), events[i].events);
  return n;
}

// Workers harvest too: a ULT that parks while its worker has nothing else to
// run polls epoll without waiting (in the suspend hook), so that under load
// a ready connection is resumed by the worker itself (a deque push) instead of
// by the poller thread (a hop through the injector and often a futex wake).
// While workers keep finding events that way, the poller thread naps instead
// of sitting in epoll_wait (where every arrival would wake it for nothing).
constexpr std::int64_t nap_ns = 500'000;  // the most a nap can delay an event
std::atomic<std::int64_t> g_worker_found_at{0};  // when a worker last harvested events
std::atomic<std::uint32_t> g_poller_napping{0};  // futex word: 1 while the poller naps

void harvest_from_worker() {
  epoll_event events[batch / 4];
  const int n = epoll_wait(g_epoll_fd, events, batch / 4, 0);
  if (n > 0) {
    g_worker_found_at.store(sched::monotonic_ns(), std::memory_order_relaxed);
    for (int i = 0; i < n; ++i)
      deliver(*static_cast<fd_state*>(events[i].data.ptr), events[i].events);
    return;
  }
  // This worker runs dry with nothing pending: the poller must watch now.
  // (seq_cst store, then load: pairs with the poller's store, then load.)
  g_worker_found_at.store(0, std::memory_order_seq_cst);
  if (g_poller_napping.load(std::memory_order_seq_cst) != 0) {
    g_poller_napping.store(0, std::memory_order_relaxed);
    os::futex_wake_one(&g_poller_napping);
  }
}

void* poller_main(void*) {
  pthread_setname_np(pthread_self(), "ito-poller");
  // It wakes only ULTs that wait for I/O: the deadlock watch knows it.
  sched::helper_thread_begins();
  epoll_event events[batch];
  for (;;) {
    const std::int64_t quiet_until =
        g_worker_found_at.load(std::memory_order_relaxed) + nap_ns;
    const std::int64_t now = sched::monotonic_ns();
    if (now < quiet_until) {
      g_poller_napping.store(1, std::memory_order_seq_cst);
      if (g_worker_found_at.load(std::memory_order_seq_cst) + nap_ns > now) {
        os::futex_wait_for(&g_poller_napping, 1, quiet_until - now);
      }
      g_poller_napping.store(0, std::memory_order_relaxed);
      continue;
    }
    if (harvest(events, -1) < 0 && errno != EINTR) {
      std::fprintf(stderr, "ito: the io poller's epoll_wait failed: %s\n", std::strerror(errno));
      std::abort();
    }
  }
}

// The poller starts on first use, and again in a forked child (whose epoll
// set would be the parent's): guarded by a lock fork handlers hold over fork.
std::mutex g_start_lock;
std::atomic<bool> g_started{false};
int g_start_error = 0;  // guarded by g_start_lock

// Starts the poller once; returns false (errno set) if it cannot.
bool poller_running() {
  if (g_started.load(std::memory_order_acquire)) [[likely]] return true;
  std::lock_guard hold(g_start_lock);
  if (!g_started.load(std::memory_order_relaxed) && g_start_error == 0) {
    g_epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    if (g_epoll_fd < 0) {
      g_start_error = errno;
    } else if ((g_start_error = start_helper_thread(&poller_main, nullptr)) == 0) {
      g_started.store(true, std::memory_order_release);
    }
  }
  if (g_start_error != 0) errno_now() = g_start_error;
  return g_start_error == 0;
}

bool ensure_registered(int fd, fd_state& st) {
  if (st.registered.load(std::memory_order_acquire)) [[likely]] return true;
  if (!poller_running()) return false;
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLPRI | EPOLLET;
  ev.data.ptr = &st;
  // Two ULTs may register at once: EEXIST means the other one did.
  if (epoll_ctl(g_epoll_fd, EPOLL_CTL_ADD, fd, &ev) != 0 && errno_now() != EEXIST) return false;
  st.registered.store(true, std::memory_order_release);
  return true;
}

// The suspend hook: the ULT's context is saved. Take a close or a timeout
// that came before we got here, or a remembered edge, else park.
void park_hook(sched::ult* self, void* arg) {
  auto* w = static_cast<fd_waiter*>(arg);
  fd_state& st = *w->fd;
  st.lock.lock();
  // Closed since the call began (this outcome wins over a timeout that fired
  // first: the descriptor is gone either way).
  if (st.generation.load(std::memory_order_relaxed) != w->generation)
    w->state = fd_waiter::phase::closed;
  if (w->state == fd_waiter::phase::timed_out || w->state == fd_waiter::phase::closed) {
    st.lock.unlock();
    sched::make_ready(self);
    return;
  }
  const bool edge_since_read =
      w->in_edges_seen >= 0 &&
      st.in_edges.load(std::memory_order_relaxed) != static_cast<std::uint32_t>(w->in_edges_seen);
  if ((st.ready & w->interest) || edge_since_read) {
    st.ready &= ~w->interest;
    w->state = fd_waiter::phase::woken;
    st.lock.unlock();
    sched::make_ready(self);
    return;
  }
  link(st, w);
  st.lock.unlock();
  // Switching to the scheduler loop means this worker has run dry.
  if (!sched::current_worker()->current) harvest_from_worker();
}

struct park_timer : sched::timer_entry {
  fd_waiter* waiter = nullptr;
};

// Runs under the timer queue's lock, on a worker. Only a record still linked
// is woken here; one not parked yet is marked for its hook; one woken by the
// poller or by close meanwhile belongs to them, and keeps its outcome.
void on_timeout(sched::timer_entry* t) {
  fd_waiter* w = static_cast<park_timer*>(t)->waiter;
  fd_state& st = *w->fd;
  bool wake = false;
  st.lock.lock();
  if (w->state == fd_waiter::phase::linked) {
    unlink(st, w);
    wake = true;
  }
  if (w->state == fd_waiter::phase::linked || w->state == fd_waiter::phase::idle)
    w->state = fd_waiter::phase::timed_out;
  st.lock.unlock();
  if (wake) sched::make_ready(w->self);
}

// A vfork child may not park (its scheduler is the parent's): it blocks in
// poll, as a plain thread would, and says "woken" or "timed out" alike.
int wait_in_vfork_child(int fd, std::uint32_t interest, std::int64_t deadline_ns) {
  pollfd p{fd, static_cast<short>(((interest & ready_in) ? POLLIN : 0) |
                                  ((interest & ready_out) ? POLLOUT : 0)),
           0};
  int timeout_ms = -1;
  if (deadline_ns != no_deadline)
    timeout_ms = static_cast<int>(
        std::min<std::int64_t>((std::max<std::int64_t>(deadline_ns - sched::monotonic_ns(), 0) +
                                999'999) / 1'000'000,
                               INT32_MAX));
  const int n = ::poll(&p, 1, timeout_ms);
  return n < 0 ? -1 : n;
}

}  // namespace

int park_until_ready(int fd, fd_state& st, std::uint32_t generation, std::uint32_t interest,
                     std::int64_t deadline_ns, std::int64_t in_edges_seen) {
  // Closed since the call began: do not register whatever took the number.
  if (st.current_generation() != generation) return fail_closed();
  if (in_vfork_child()) [[unlikely]] return wait_in_vfork_child(fd, interest, deadline_ns);
  if (!ensure_registered(fd, st)) return -1;
  end_run_without_park();
  fd_waiter w;
  w.self = sched::current_ult();
  w.fd = &st;
  w.generation = generation;
  w.interest = interest;
  w.in_edges_seen = in_edges_seen;
  park_timer timer;
  sched::runtime_state* rt = nullptr;
  if (deadline_ns != no_deadline) {
    // Armed before parking, so the hook sees a timeout that already fired.
    timer.deadline_ns = deadline_ns;
    timer.fire = &on_timeout;
    timer.waiter = &w;
    rt = sched::current_worker()->rt;
    rt->timers.add(&timer);
    sched::notify_work(rt);  // a parked worker must recompute how long it may sleep
  }
  sched::suspend(&park_hook, &w, "I/O on a descriptor", &st);
  // cancel() returns only once on_timeout is not running: w may die after it.
  if (rt) rt->timers.cancel(&timer);
  st.lock.lock();
  const fd_waiter::phase end = w.state;
  st.lock.unlock();
  if (end == fd_waiter::phase::closed) return fail_closed();
  return end == fd_waiter::phase::timed_out ? 0 : 1;
}

fd_waiter* begin_close(fd_state& st) noexcept {
  st.lock.lock();
  st.generation.store(st.generation.load(std::memory_order_relaxed) + 1,
                      std::memory_order_release);
  fd_waiter* parked = st.waiters;
  st.waiters = nullptr;
  for (fd_waiter* w = parked; w; w = w->next) w->state = fd_waiter::phase::closed;
  st.ready = 0;  // edges of the old descriptor; a new one reports its own when registered
  st.lock.unlock();
  return parked;
}

void wake_closed(fd_waiter* parked) noexcept { wake_list(parked); }

void wake_all_parked(fd_state& st) noexcept {
  st.lock.lock();
  fd_waiter* all = st.waiters;
  st.waiters = nullptr;
  // A ULT between its failed call and its park sees these and retries rather
  // than sleeping through the change; a new descriptor that takes the number
  // pays at most one extra try.
  st.ready = ready_in | ready_out;
  for (fd_waiter* w = all; w; w = w->next) w->state = fd_waiter::phase::woken;
  st.lock.unlock();
  wake_list(all);
}

void poller_before_fork() noexcept { g_start_lock.lock(); }
void poller_after_fork_in_parent() noexcept { g_start_lock.unlock(); }
void poller_after_fork_in_child() noexcept {
  g_start_lock.unlock();
  if (!g_started.load(std::memory_order_relaxed)) return;
  // The poller thread is the parent's and so is the epoll set: drop our
  // reference to it (the parent's stays) and start afresh on first use.
  close(g_epoll_fd);
  g_epoll_fd = -1;
  g_worker_found_at.store(0, std::memory_order_relaxed);
  g_poller_napping.store(0, std::memory_order_relaxed);
  g_started.store(false, std::memory_order_relaxed);
}

}  // namespace ito::detail

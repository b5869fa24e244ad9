// SPDX-License-Identifier: Apache-2.0
#include "distributed/scheduler/remote_join.hpp"

#include <cerrno>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "arch/sanitizer.hpp"
#include "distributed/scheduler/counts.hpp"
#include "distributed/scheduler/error_transport.hpp"
#include "distributed/scheduler/local_runtime.hpp"
#include "distributed/scheduler/ult_image.hpp"
#include "distributed/scheduler/wire.hpp"
#include "distributed/scheduler/stack_area.hpp"
#include "sched/join_word.hpp"
#include "sched/registry.hpp"
#include "sched/scheduler.hpp"

#if ITO_ASAN
#include <sanitizer/asan_interface.h>
#endif

namespace ito::dist::detail::remote_join {
namespace {

using sched::ult;
namespace join_word = sched::join_word;

// What a home knows of one of its ULTs whose join goes through messages.
struct tracked {
  bool away = false;  // runs (or waits to run) on another process
  ult* local_joiner = nullptr;
  int remote_joiner = -1;
  bool detached = false;
};

struct tables {
  std::mutex lock;  // never held across MPI, a fence or a suspension
  std::unordered_map<std::uintptr_t, tracked> homes;  // this rank's ULTs
  std::unordered_map<std::uintptr_t, ult*> waiting;   // local joiners of foreign ULTs
};
tables* g = nullptr;

std::unique_ptr<outgoing> done_message(int to, ult* u, const char* lo, std::size_t len) {
  return wire::make(to, msg::done, u, lo, len, 0, export_error(u));
}

// ---- At the home ------------------------------------------------------------

// A joiner on process `from` asks for u.
void on_join_request(const header& h, const char*, int from) {
  ult* u = ptr<ult>(h.descriptor);
  if (u->frame_result_local) return wire::queue(wire::make(from, msg::come_home, u));
  std::unique_ptr<outgoing> reply;
  {
    std::lock_guard hold(g->lock);
    std::uintptr_t s = join_word::read(u);
    for (;;) {
      if (s == sched::join_running) {
        if (!join_word::hand_over(u, s)) continue;
        g->homes[addr(u)].remote_joiner = from;
        return;
      }
      if (s == sched::join_finished) {
        if (!join_word::claim_finished(u, s)) continue;
        require_exportable(u);
        char* lo = frame_lo(u);
        reply = done_message(from, u, lo, static_cast<std::size_t>(u->stack.hi - lo));
        break;
      }
      if (s == sched::join_remote) {
        tracked& t = g->homes[addr(u)];
        if (t.away && t.remote_joiner < 0 && !t.local_joiner && !t.detached) {
          t.remote_joiner = from;
          return;
        }
      }
      reply = wire::make(from, msg::done, u, nullptr, 0, s == sched::join_released ? ESRCH : EINVAL);
      break;
    }
  }
  wire::queue(std::move(reply));
}

void on_detach_request(const header& h, const char*, int) {
  ult* u = ptr<ult>(h.descriptor);
  bool release_now = false;
  {
    std::lock_guard hold(g->lock);
    std::uintptr_t s = join_word::read(u);
    while (s == sched::join_running || s == sched::join_finished) {
      if (s == sched::join_running ? join_word::detach_running(u, s)
                                   : (release_now = join_word::claim_finished(u, s)))
        break;
    }
    if (s == sched::join_remote) {
      auto it = g->homes.find(addr(u));
      if (it != g->homes.end() && it->second.remote_joiner < 0 && !it->second.local_joiner)
        it->second.detached = true;
    }
  }
  if (release_now) sched::release(u, true);
}

// u ended on another process, which sent its frame and descriptor.
void on_ended(const header& h, const char* payload, int) {
  ult* u = ptr<ult>(h.descriptor);
  ult* wake = nullptr;
  bool release_now = false;
  std::unique_ptr<outgoing> forward;
  // DAG consistency: a joiner here, now or later, sees what the child
  // released. First: once its end is published below, a join that comes
  // later returns at once (no message, no wake-up) on another thread and
  // reads. (Acquiring after publishing left such a joiner a stale copy: a
  // page the child wrote, read by the main ULT right after its join, 1 run
  // in ~10 at 4 ranks x 2 workers.) A joiner elsewhere acquires itself
  // (on_done); for it this acquire is one too many, and harmless.
  acquire_for_ult();
  {
    std::lock_guard hold(g->lock);
    write_home_copy(u, h, payload);
    import_error(u, payload + h.len, h.error_len);
    auto it = g->homes.find(addr(u));
    const tracked t = it->second;
    g->homes.erase(it);
    if (t.local_joiner) {
      wake = t.local_joiner;
      join_word::end_away_for(u, wake);
    } else if (t.remote_joiner >= 0) {
      join_word::released_elsewhere(u);
      forward = done_message(t.remote_joiner, u, ptr<char>(h.start), h.len);
    } else if (t.detached) {
      join_word::released_elsewhere(u);
      release_now = true;
    } else {
      join_word::finished_elsewhere(u);
    }
  }
  if (forward) wire::queue(std::move(forward));
  if (release_now) sched::release(u, true);
  if (wake) sched::make_ready(wake);
}

// The joiner's process is done with the copy: the stack may be reused.
void on_free_stack(const header& h, const char*, int) {
  ult* u = ptr<ult>(h.descriptor);
#if ITO_ASAN
  // Its frames' redzones, poisoned while it ran here, must not greet the next ULT.
  __asan_unpoison_memory_region(u->stack.lo, u->stack.size());
#endif
  sched::registry_remove(u);
  arch::sanitizer_destroy_fiber(u->fiber);
  local_runtime()->stacks.release(u->stack);
}

// ---- At a joiner's process --------------------------------------------------

// The home's answer about a foreign ULT.
void on_done(const header& h, const char* payload, int) {
  ult* u = ptr<ult>(h.descriptor);
  ult* joiner = take_waiting_joiner(u);
  if (h.err == 0) {
    write_foreign_copy(u, h, payload, ptr<char>(h.start), ptr<char>(h.start) + h.len);
    import_error(u, payload + h.len, h.error_len);
    join_word::end_away_for(u, joiner);
  } else {
    host_range(u, u + 1);
    join_word::restore(u, h.err == ESRCH ? sched::join_released : sched::join_detached);
  }
  acquire_for_ult();  // DAG consistency: the joiner sees what the child released
  sched::make_ready(joiner);
}

}  // namespace

void start() {
  g = new tables;
  wire::on(msg::join_request, &on_join_request);
  wire::on(msg::detach_request, &on_detach_request);
  wire::on(msg::ended, &on_ended);
  wire::on(msg::free_stack, &on_free_stack);
  wire::on(msg::done, &on_done);
}

void stop() noexcept {
  delete g;
  g = nullptr;
}

void departing(ult* u) {
  std::lock_guard hold(g->lock);
  tracked& t = g->homes[addr(u)];
  std::uintptr_t s = join_word::read(u);
  for (;;) {
    if (s == sched::join_remote) break;  // a remote joiner is recorded already
    t.local_joiner = sched::is_joiner(s) ? reinterpret_cast<ult*>(s) : nullptr;
    t.detached = s == sched::join_detached;
    if (join_word::hand_over(u, s)) break;
  }
  t.away = true;
}

void returned(ult* u, const header& h, const char* payload) {
  std::lock_guard hold(g->lock);
#if ITO_ASAN
  // Frames came and went elsewhere: what this process poisoned is stale.
  __asan_unpoison_memory_region(ptr<char>(h.stack_lo), h.stack_hi - h.stack_lo);
#endif
  write_home_copy(u, h, payload);
  auto it = g->homes.find(addr(u));
  const tracked t = it->second;
  std::uintptr_t s = sched::join_running;
  if (t.local_joiner) s = reinterpret_cast<std::uintptr_t>(t.local_joiner);
  else if (t.remote_joiner >= 0) s = sched::join_remote;
  else if (t.detached) s = sched::join_detached;
  if (t.remote_joiner >= 0) it->second.away = false;
  else g->homes.erase(it);
  join_word::restore(u, s);
}

ult* take_waiting_joiner(const ult* child) {
  std::lock_guard hold(g->lock);
  auto it = g->waiting.find(addr(child));
  ult* joiner = it->second;
  g->waiting.erase(it);
  return joiner;
}

int wait(ult* child) {
  bump(counts().remote_joins);
  if (sched::is_foreign(child)) {
    sched::suspend(
        [](ult* self, void* c) {
          auto* u = static_cast<ult*>(c);
          {
            std::lock_guard hold(g->lock);
            g->waiting[addr(u)] = self;
          }
          wire::queue(wire::make(home_of(u), msg::join_request, u));
        },
        child, "join (another process)", child);
    return 0;
  }
  {
    std::lock_guard hold(g->lock);
    if (join_word::read(child) != sched::join_remote) return 0;
    // Remote without an entry cannot happen (the state and the entry change
    // together, under the lock); at home, remote means a remote joiner.
    auto it = g->homes.find(addr(child));
    if (it == g->homes.end() || !it->second.away || it->second.local_joiner ||
        it->second.remote_joiner >= 0 || it->second.detached)
      return EINVAL;
  }
  sched::suspend(
      [](ult* self, void* c) {
        auto* u = static_cast<ult*>(c);
        std::unique_lock hold(g->lock);
        auto it = g->homes.find(addr(u));
        if (join_word::read(u) == sched::join_remote && it != g->homes.end() &&
            it->second.away && !it->second.local_joiner) {
          it->second.local_joiner = self;
          return;
        }
        hold.unlock();
        sched::make_ready(self);  // it came back or ended meanwhile: look again
      },
      child, "join (another process)", child);
  return 0;
}

int detach(ult* child) {
  if (sched::is_foreign(child)) {
    wire::queue(wire::make(home_of(child), msg::detach_request, child));
    return 0;
  }
  std::lock_guard hold(g->lock);
  if (join_word::read(child) != sched::join_remote) return EAGAIN;
  auto it = g->homes.find(addr(child));
  if (it == g->homes.end()) return EINVAL;
  if (it->second.local_joiner || it->second.remote_joiner >= 0 || it->second.detached) return EINVAL;
  it->second.detached = true;
  return 0;
}

void ended(sched::worker*, ult* self) noexcept {
  require_exportable(self);
  char* lo = frame_lo(self);
  const auto len = static_cast<std::size_t>(self->stack.hi - lo);
  if (sched::is_foreign(self)) {
    bump(counts().remote_ends);
    // Dropped before the message leaves: the answer to it (a joiner here
    // gets the frame back) may be written into this range, and a drop after
    // it (a worker preempted in between) zeroed the result the joiner read.
    auto message = wire::make(home_of(self), msg::ended, self, lo, len, 0, export_error(self));
    drop_range(self->stack.lo, self->stack.hi);
    wire::queue(std::move(message));
    return;
  }
  // Home, with a joiner on another process.
  std::unique_ptr<outgoing> reply;
  {
    std::lock_guard hold(g->lock);
    auto it = g->homes.find(addr(self));
    if (it == g->homes.end() || it->second.remote_joiner < 0)
      fail_for(self, "ended in state remote, untracked");
    const int to = it->second.remote_joiner;
    g->homes.erase(it);
    join_word::released_elsewhere(self);
    reply = done_message(to, self, lo, len);
  }
  wire::queue(std::move(reply));
}

void release(ult* u) noexcept {
  // Dropped first: once the home has the stack back it may send another ULT
  // on it here, whose copy a late drop would zero.
  auto message = wire::make(home_of(u), msg::free_stack, u);
  drop_range(u->stack.lo, u->stack.hi);
  wire::queue(std::move(message));
}

}  // namespace ito::dist::detail::remote_join

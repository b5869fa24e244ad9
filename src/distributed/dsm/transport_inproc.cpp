// SPDX-License-Identifier: Apache-2.0
// The DSM's transport for N simulated ranks in one process and one thread
// (transport_inproc.hpp says how it schedules; transport.hpp what each
// operation promises). Tests only: ito_dsm_inproc links it instead of
// transport_mpi.cpp.
#include "distributed/dsm/transport_inproc.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <random>
#include <vector>

#include "distributed/dsm/transport.hpp"

namespace ito::dist::detail::transport {
namespace {

enum class kind : std::uint8_t { get, put, or_words, read_words, read_entries, claim_entry };

bool accumulate_like(kind k) noexcept { return k != kind::get && k != kind::put; }

struct operation {
  kind k;
  std::size_t at;     // bytes (data) or entries (directory) at the target
  std::size_t count;  // bytes (get), words or entries
  void* into;
  const void* from;
  std::vector<int> run_at, run_length;  // put's runs (MPI keeps its type till completion)
};

struct sent_mail {
  int from;
  const std::uint64_t* words;  // the sender's buffer: untouched until acknowledged
  std::size_t count;
};

struct rank_windows {
  char* data = nullptr;
  std::size_t data_bytes = 0;
  std::int64_t* entries = nullptr;
  std::size_t entry_count = 0;
  std::deque<sent_mail> inbox;
  std::size_t unacknowledged = 0;  // mails this rank sent
};

struct world {
  int ranks = 0;
  int current = 0;
  unsigned eagerness = 0;
  std::mt19937_64 random;
  std::vector<rank_windows> rank;
  std::vector<std::deque<operation>> queues;  // [(origin * ranks + target) * 2 + window]
  std::size_t queued = 0;
  std::vector<std::size_t> queued_by;
  void (*yield)(void*) = nullptr;
  void* yield_arg = nullptr;
  std::vector<std::pair<std::size_t, std::size_t>> choices;  // apply_one's scratch
};
world w;

[[noreturn]] void broken(const char* what, int origin, int target, std::size_t at,
                         std::size_t count) {
  std::fprintf(stderr,
               "ito: dsm: in-process transport: %s (rank %d to rank %d, at %zu, %zu units)\n",
               what, origin, target, at, count);
  std::abort();
}

std::size_t queue_of(int origin, int target, window win) noexcept {
  return (static_cast<std::size_t>(origin) * static_cast<std::size_t>(w.ranks) +
          static_cast<std::size_t>(target)) * 2 + (win == window::data ? 0 : 1);
}

void apply(std::size_t q, std::size_t index) {
  auto& queue = w.queues[q];
  operation op = std::move(queue[index]);
  queue.erase(queue.begin() + static_cast<std::ptrdiff_t>(index));
  --w.queued;
  const int origin = static_cast<int>(q / 2 / static_cast<std::size_t>(w.ranks));
  const int target = static_cast<int>(q / 2 % static_cast<std::size_t>(w.ranks));
  --w.queued_by[static_cast<std::size_t>(origin)];
  rank_windows& t = w.rank[static_cast<std::size_t>(target)];
  auto check = [&](std::size_t end, std::size_t limit) {
    if (end > limit) broken("an operation outside the target's window", origin, target, op.at, op.count);
  };
  auto* words = reinterpret_cast<std::uint64_t*>(t.data + op.at);
  switch (op.k) {
    case kind::get:
      check(op.at + op.count, t.data_bytes);
      std::memcpy(op.into, t.data + op.at, op.count);
      break;
    case kind::put:
      for (std::size_t k = 0; k < op.run_at.size(); ++k) {
        const auto run = static_cast<std::size_t>(op.run_at[k]);
        const auto length = static_cast<std::size_t>(op.run_length[k]);
        check(op.at + run + length, t.data_bytes);
        std::memcpy(t.data + op.at + run, static_cast<const char*>(op.from) + run, length);
      }
      break;
    case kind::or_words:
      check(op.at + op.count * 8, t.data_bytes);
      for (std::size_t k = 0; k < op.count; ++k)
        __atomic_fetch_or(&words[k], static_cast<const std::uint64_t*>(op.from)[k], __ATOMIC_RELAXED);
      break;
    case kind::read_words:
      check(op.at + op.count * 8, t.data_bytes);
      for (std::size_t k = 0; k < op.count; ++k)
        static_cast<std::uint64_t*>(op.into)[k] = __atomic_load_n(&words[k], __ATOMIC_RELAXED);
      break;
    case kind::read_entries:
      check(op.at + op.count, t.entry_count);
      std::memcpy(op.into, t.entries + op.at, op.count * sizeof(std::int64_t));
      break;
    case kind::claim_entry: {
      check(op.at + 1, t.entry_count);
      const std::int64_t found = t.entries[op.at];
      if (found == 0) t.entries[op.at] = *static_cast<const std::int64_t*>(op.from);
      *static_cast<std::int64_t*>(op.into) = found;
      break;
    }
  }
}

// The operations of queue q that may be applied now: any get or put, and
// the first accumulate-like one.
template <class Each>
void eligible(std::size_t q, Each&& each) {
  const auto& queue = w.queues[q];
  bool accumulate_seen = false;
  for (std::size_t i = 0; i < queue.size(); ++i) {
    if (!accumulate_like(queue[i].k)) {
      each(i);
    } else if (!accumulate_seen) {
      accumulate_seen = true;
      each(i);
    }
  }
}

bool pick_and_apply(std::size_t first_queue, std::size_t end_queue) {
  w.choices.clear();
  for (std::size_t q = first_queue; q < end_queue; ++q)
    eligible(q, [&](std::size_t i) { w.choices.emplace_back(q, i); });
  if (w.choices.empty()) return false;
  const auto [q, i] = w.choices[w.random() % w.choices.size()];
  apply(q, i);
  return true;
}

void maybe_apply() {
  if (w.queued && w.random() % 1024 < w.eagerness) pick_and_apply(0, w.queues.size());
}

void yield_to_others() {
  if (!w.yield) return;
  const int me = w.current;
  w.yield(w.yield_arg);
  w.current = me;
}

bool issue(int target, window win, operation op) {
  if (target < 0 || target >= w.ranks) broken("no such target", w.current, target, op.at, op.count);
  maybe_apply();
  w.queues[queue_of(w.current, target, win)].push_back(std::move(op));
  ++w.queued;
  ++w.queued_by[static_cast<std::size_t>(w.current)];
  return true;
}

}  // namespace

namespace inproc {

void reset(int ranks, std::uint64_t seed) {
  w.ranks = ranks;
  w.current = 0;
  w.random.seed(seed);
  w.rank.assign(static_cast<std::size_t>(ranks), rank_windows{});
  w.queues.assign(static_cast<std::size_t>(ranks) * static_cast<std::size_t>(ranks) * 2, {});
  w.queued = 0;
  w.queued_by.assign(static_cast<std::size_t>(ranks), 0);
  w.yield = nullptr;
}

void set_rank(int rank) noexcept { w.current = rank; }
int rank() noexcept { return w.current; }
void set_eagerness(unsigned per_1024) noexcept { w.eagerness = per_1024; }
bool apply_one() { return w.queued && pick_and_apply(0, w.queues.size()); }
std::size_t queued() noexcept { return w.queued; }
std::size_t queued_by(int origin) noexcept { return w.queued_by[static_cast<std::size_t>(origin)]; }
std::size_t mail_waiting(int rank) noexcept { return w.rank[static_cast<std::size_t>(rank)].inbox.size(); }
void set_yield(void (*yield)(void*), void* arg) noexcept {
  w.yield = yield;
  w.yield_arg = arg;
}

}  // namespace inproc

bool open_windows(char* data, std::size_t data_bytes, std::int64_t* entries,
                  std::size_t entry_count) {
  rank_windows& r = w.rank[static_cast<std::size_t>(w.current)];
  r.data = data;
  r.data_bytes = data_bytes;
  r.entries = entries;
  r.entry_count = entry_count;
  return true;
}

void close_windows() noexcept {
  rank_windows& r = w.rank[static_cast<std::size_t>(w.current)];
  r.data = nullptr;
  r.entries = nullptr;
}

bool get(int target, std::size_t at, void* into, std::size_t bytes) {
  return issue(target, window::data, {kind::get, at, bytes, into, nullptr, {}, {}});
}

bool put_runs(int target, std::size_t at, const char* from, const int* run_at,
              const int* run_length, int runs) {
  operation op{kind::put, at, 0, nullptr, from, {}, {}};
  op.run_at.assign(run_at, run_at + runs);
  op.run_length.assign(run_length, run_length + runs);
  return issue(target, window::data, std::move(op));
}

bool or_words(int target, std::size_t at, const std::uint64_t* bits, std::size_t count) {
  return issue(target, window::data, {kind::or_words, at, count, nullptr, bits, {}, {}});
}

bool read_words(int target, std::size_t at, std::uint64_t* into, std::size_t count) {
  return issue(target, window::data, {kind::read_words, at, count, into, nullptr, {}, {}});
}

bool read_entries(int target, std::size_t index, std::int64_t* into, std::size_t count) {
  return issue(target, window::directory, {kind::read_entries, index, count, into, nullptr, {}, {}});
}

bool claim_entry(int target, std::size_t index, const std::int64_t* mine, std::int64_t* found) {
  return issue(target, window::directory, {kind::claim_entry, index, 1, found, mine, {}, {}});
}

bool flush(window win, int target) {
  maybe_apply();
  const std::size_t q = queue_of(w.current, target, win);
  if (!w.queues[q].empty()) yield_to_others();
  while (!w.queues[q].empty()) pick_and_apply(q, q + 1);
  return true;
}

bool open_mail(int) { return true; }
void close_mail() noexcept {}

bool send_mail(int home, const std::uint64_t* words, std::size_t count) {
  maybe_apply();
  w.rank[static_cast<std::size_t>(home)].inbox.push_back({w.current, words, count});
  ++w.rank[static_cast<std::size_t>(w.current)].unacknowledged;
  return true;
}

bool mail_delivered(bool* done) {
  maybe_apply();
  *done = w.rank[static_cast<std::size_t>(w.current)].unacknowledged == 0;
  if (!*done) yield_to_others();
  return true;
}

// The next mail: from a sender chosen at random, the oldest of that sender's
// (MPI does not overtake between one sender and one receiver).
bool receive_mail(std::vector<std::uint64_t>& into, int* from, bool* got) {
  maybe_apply();
  auto& inbox = w.rank[static_cast<std::size_t>(w.current)].inbox;
  *got = !inbox.empty();
  if (!*got) return true;
  const int sender = inbox[w.random() % inbox.size()].from;
  for (auto it = inbox.begin(); it != inbox.end(); ++it) {
    if (it->from != sender) continue;
    into.assign(it->words, it->words + it->count);
    *from = it->from;
    inbox.erase(it);
    return true;
  }
  return true;
}

bool acknowledge_mail(int to) {
  auto& unacknowledged = w.rank[static_cast<std::size_t>(to)].unacknowledged;
  if (unacknowledged == 0) broken("an acknowledgement of no mail", w.current, to, 0, 0);
  --unacknowledged;
  return true;
}

}  // namespace ito::dist::detail::transport

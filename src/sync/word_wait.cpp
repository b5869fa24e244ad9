// SPDX-License-Identifier: Apache-2.0
// The bucket table behind wait_on_word. Buckets are shared by the words that
// hash to them, so a wake walks its bucket and takes only its own word's
// waiters; a bucket is held a few instructions at a time, never across a park.
#include "sync/word_wait.hpp"

#include <cerrno>
#include <cstddef>

#include "ito/sync.hpp"
#include "sync/waiter.hpp"

namespace ito::detail {
namespace {

struct alignas(64) bucket {  // one cache line each: unrelated words do not contend
  spinlock lock;
  wait_queue waiters;
};

constexpr std::size_t bucket_count = 64;  // a power of two
bucket g_buckets[bucket_count];

bucket& bucket_of(const void* word) noexcept {
  auto a = reinterpret_cast<std::uintptr_t>(word);
  a ^= a >> 17;  // words 4 bytes apart, and those a page apart, spread out
  return g_buckets[(a >> 2) & (bucket_count - 1)];
}

}  // namespace

void wait_on_word(const std::atomic<std::uint32_t>& word, std::uint32_t expected,
                  const char* what) noexcept {
  bucket& b = bucket_of(&word);
  waiter me(calling_ult());
  me.key = &word;
  b.lock.lock();
  if (word.load(std::memory_order_relaxed) != expected) {
    b.lock.unlock();
    return;
  }
  push_back(b.waiters, &me);
  b.lock.unlock();
  park(me, what, &word);
}

void wake_all_on_word(const std::atomic<std::uint32_t>& word) noexcept {
  bucket& b = bucket_of(&word);
  waiter* woken = nullptr;
  waiter** last = &woken;
  b.lock.lock();
  for (waiter* w = b.waiters.head; w;) {
    waiter* next = w->next;
    if (from_before_fork(*w)) {
      remove(b.waiters, w);  // in a forked child, a parent's waiter: never woken
    } else if (w->key == &word) {
      remove(b.waiters, w);
      if (claim(*w, by_wake)) {  // a timed waiter's time-out may have won
        *last = w;
        last = &w->next;
      }
    }
    w = next;
  }
  *last = nullptr;
  b.lock.unlock();
  unpark_all(woken);
}

int wait_on_word_until(const std::atomic<std::uint32_t>& word, std::uint32_t expected,
                       std::int64_t deadline_ns, const char* what) {
  bucket& b = bucket_of(&word);
  waiter me(calling_ult());
  me.key = &word;
  timed_park wait(me, deadline_ns);
  wait.arm();
  b.lock.lock();
  if (word.load(std::memory_order_relaxed) != expected) {
    b.lock.unlock();
    return EAGAIN;
  }
  push_back(b.waiters, &me);
  b.lock.unlock();
  if (!wait.park(what, &word)) return 0;
  // A waker that popped us lost the claim and woke another in our place.
  b.lock.lock();
  if (me.queued) remove(b.waiters, &me);
  b.lock.unlock();
  return ETIMEDOUT;
}

std::uint32_t wake_on_word(const std::atomic<std::uint32_t>& word, std::uint32_t n) noexcept {
  bucket& b = bucket_of(&word);
  waiter* woken = nullptr;
  waiter** last = &woken;
  std::uint32_t count = 0;
  b.lock.lock();
  for (waiter* w = b.waiters.head; w && count < n;) {
    waiter* next = w->next;
    if (from_before_fork(*w)) {
      remove(b.waiters, w);
    } else if (w->key == &word) {
      remove(b.waiters, w);
      if (claim(*w, by_wake)) {  // not one whose time-out is ending its wait
        *last = w;
        last = &w->next;
        ++count;
      }
    }
    w = next;
  }
  *last = nullptr;
  b.lock.unlock();
  unpark_all(woken);
  return count;
}

}  // namespace ito::detail

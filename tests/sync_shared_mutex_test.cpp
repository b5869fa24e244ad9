// SPDX-License-Identifier: Apache-2.0
// ito::shared_mutex: readers share, a writer excludes, a waiting writer keeps
// new readers out (no writer starvation), the try_ forms, std::shared_lock and
// std::unique_lock, misuse errors, timed locks (the POSIX and C layers' path),
// plain OS threads, and a stress with random yields.
#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <random>
#include <shared_mutex>
#include <thread>
#include <type_traits>
#include <vector>

#include "ito/error.hpp"
#include "ito/sync.hpp"
#include "ito/thread.hpp"
#include "sched/scheduler.hpp"
#include "sync/shared_mutex_access.hpp"
#include "test_support.hpp"

namespace {

using ito::test::usage_error_code;

using ito::test::scaled;
using access = ito::detail::shared_mutex_access;

TEST(shared_mutex, is_all_zero_bytes_when_unlocked) {
  static_assert(std::is_nothrow_default_constructible_v<ito::shared_mutex>);
  alignas(ito::shared_mutex) unsigned char zeros[sizeof(ito::shared_mutex)] = {};
  ito::shared_mutex fresh;
  EXPECT_EQ(std::memcmp(&fresh, zeros, sizeof zeros), 0);
}

TEST(shared_mutex, readers_share_and_a_writer_excludes) {
  ito::start_main_thread_with_worker_size(1, [] {
    ito::shared_mutex m;
    m.lock_shared();
    EXPECT_TRUE(ito::create_thread(ito::own_ult, [&] {
                  if (!m.try_lock_shared()) return false;
                  m.unlock_shared();
                  return true;
                }).get());
    EXPECT_FALSE(ito::create_thread(ito::own_ult, [&] { return m.try_lock(); }).get());
    m.unlock_shared();

    m.lock();
    EXPECT_FALSE(ito::create_thread(ito::own_ult, [&] { return m.try_lock_shared(); }).get());
    EXPECT_FALSE(ito::create_thread(ito::own_ult, [&] { return m.try_lock(); }).get());
    m.unlock();
    EXPECT_TRUE(m.try_lock());
    m.unlock();
  });
}

// One worker makes the order certain: the main ULT spawns help-first, and its
// yield runs the child up to its park.
TEST(shared_mutex, a_waiting_writer_keeps_new_readers_out) {
  ito::start_main_thread_with_worker_size(1, [] {
    ito::shared_mutex m;
    std::atomic<int> order{0};
    int writer_at = 0, reader_at = 0;
    m.lock_shared();
    auto writer = ito::create_thread(ito::own_ult, [&] {
      std::unique_lock lock(m);
      writer_at = ++order;
    });
    ito::yield();
    EXPECT_FALSE(m.try_lock_shared());  // a writer waits: no barging past it
    auto reader = ito::create_thread(ito::own_ult, [&] {
      std::shared_lock lock(m);
      reader_at = ++order;
    });
    ito::yield();
    m.unlock_shared();
    writer.get();
    reader.get();
    EXPECT_EQ(writer_at, 1);
    EXPECT_EQ(reader_at, 2);
  });
}

// A run of readers queued behind a writer get the lock together when it leaves.
TEST(shared_mutex, queued_readers_are_granted_together) {
  ito::start_main_thread_with_worker_size(1, [] {
    ito::shared_mutex m;
    m.lock();
    std::atomic<int> inside{0};
    std::atomic<int> most_inside{0};
    ito::barrier both(2);
    std::vector<ito::future<void>> readers;
    for (int i = 0; i < 2; ++i) {
      readers.push_back(ito::create_thread(ito::own_ult, [&] {
        std::shared_lock lock(m);
        int now = ++inside;
        int seen = most_inside.load();
        while (now > seen && !most_inside.compare_exchange_weak(seen, now)) {
        }
        both.arrive_and_wait();  // both must hold it at once to pass
        --inside;
      }));
      ito::yield();  // it queues behind the writer
    }
    m.unlock();
    for (auto& r : readers) r.get();
    EXPECT_EQ(most_inside.load(), 2);
  });
}

TEST(shared_mutex, writers_are_not_starved_by_a_stream_of_readers) {
  for (unsigned workers : {1u, 4u}) {
    ito::start_main_thread_with_worker_size(workers, [] {
      ito::shared_mutex m;
      std::atomic<bool> writer_done{false};
      std::vector<ito::future<void>> readers;
      // Overlapping readers: without writer preference one of them would
      // always hold the lock, and the writer would wait for ever.
      for (int i = 0; i < 4; ++i) {
        readers.push_back(ito::create_thread(ito::own_ult, [&] {
          while (!writer_done.load()) {
            std::shared_lock lock(m);
            ito::yield();
          }
        }));
      }
      ito::yield();
      {
        std::unique_lock lock(m);
        writer_done = true;
      }
      for (auto& r : readers) r.get();
      EXPECT_TRUE(writer_done.load());
    });
  }
}

TEST(shared_mutex, works_with_the_standard_lock_types) {
  ito::start_main_thread_with_worker_size(2, [] {
    ito::shared_mutex m;
    {
      std::shared_lock reader(m, std::try_to_lock);
      EXPECT_TRUE(reader.owns_lock());
      std::shared_lock second(m, std::try_to_lock);
      EXPECT_TRUE(second.owns_lock());
      std::unique_lock writer(m, std::try_to_lock);
      EXPECT_FALSE(writer.owns_lock());
    }
    std::unique_lock writer(m, std::try_to_lock);
    EXPECT_TRUE(writer.owns_lock());
    writer.unlock();
    std::scoped_lock both(m);
  });
}

TEST(shared_mutex, misuse_is_reported) {
  ito::start_main_thread_with_worker_size(1, [] {
    ito::shared_mutex m;
    EXPECT_EQ(usage_error_code([&] { m.unlock(); }), EPERM);
    EXPECT_EQ(usage_error_code([&] { m.unlock_shared(); }), EPERM);
    m.lock();
    EXPECT_EQ(usage_error_code([&] { m.lock(); }), EDEADLK);
    EXPECT_EQ(usage_error_code([&] { m.lock_shared(); }), EDEADLK);
    EXPECT_EQ(usage_error_code([&] { m.unlock_shared(); }), EPERM);
    // Somebody else's write hold is not the caller's to release.
    EXPECT_EQ(ito::create_thread(ito::own_ult, [&] { return usage_error_code([&] { m.unlock(); }); }).get(),
              EPERM);
    m.unlock();
    m.lock_shared();
    EXPECT_EQ(usage_error_code([&] { m.unlock(); }), EPERM);
    m.unlock_shared();
  });
}

TEST(shared_mutex, timed_out_writer_lets_the_readers_behind_it_in) {
  ito::start_main_thread_with_worker_size(1, [] {
    ito::shared_mutex m;
    m.lock_shared();
    auto writer = ito::create_thread(ito::own_ult, [&] {
      return access::lock(m, true, ito::sched::monotonic_ns() + 20'000'000);
    });
    ito::yield();  // the writer queues
    auto reader = ito::create_thread(ito::own_ult, [&] {
      int rc = access::lock(m, false, access::never);
      if (rc == 0) m.unlock_shared();
      return rc;
    });
    ito::yield();  // the reader queues behind it
    // The writer gives up while we still read; the reader queued behind it
    // must then join us instead of waiting for our unlock.
    EXPECT_EQ(writer.get(), ETIMEDOUT);
    EXPECT_EQ(reader.get(), 0);
    m.unlock_shared();
    EXPECT_EQ(access::try_lock(m, true), 0);
    EXPECT_EQ(access::try_lock(m, false), EDEADLK);
    EXPECT_EQ(access::unlock(m), 0);
    EXPECT_FALSE(access::busy(m));
  });
}

TEST(shared_mutex, plain_os_threads_block_and_time_out) {
  ito::shared_mutex m;
  m.lock();
  std::atomic<bool> timed_out{false};
  std::thread waiter([&] {
    EXPECT_EQ(access::lock(m, false, ito::sched::monotonic_ns() + 10'000'000), ETIMEDOUT);
    timed_out = true;
    std::shared_lock lock(m);  // waits for the unlock below, or comes after it
  });
  while (!timed_out.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  m.unlock();
  waiter.join();
  EXPECT_FALSE(access::busy(m));
}

TEST(shared_mutex, stress_with_random_yields_at_four_workers) {
  const int ults = 32;
  const int rounds = static_cast<int>(scaled(2000));
  ito::start_main_thread_with_worker_size(4, [&] {
    ito::shared_mutex m;
    std::atomic<int> readers_in{0};
    std::atomic<int> writers_in{0};
    std::atomic<int> violations{0};
    std::uint64_t a = 0, b = 0;  // plain: the lock alone protects them
    std::vector<ito::future<void>> done;
    for (int u = 0; u < ults; ++u) {
      done.push_back(ito::create_thread(ito::own_ult, [&, u] {
        std::minstd_rand rng(static_cast<unsigned>(u) + 1);
        for (int r = 0; r < rounds; ++r) {
          const unsigned roll = rng() % 8;
          if (roll == 0) {
            std::unique_lock lock(m);
            if (writers_in.fetch_add(1) != 0 || readers_in.load() != 0) ++violations;
            ++a;
            if (rng() % 2) ito::yield();
            ++b;
            writers_in.fetch_sub(1);
          } else if (roll == 1 && m.try_lock_shared()) {
            if (writers_in.load() != 0 || a != b) ++violations;
            m.unlock_shared();
          } else {
            std::shared_lock lock(m);
            readers_in.fetch_add(1);
            if (writers_in.load() != 0) ++violations;
            if (rng() % 4 == 0) ito::yield();
            if (a != b) ++violations;
            readers_in.fetch_sub(1);
          }
          if (rng() % 16 == 0) ito::yield();
        }
      }));
    }
    for (auto& f : done) f.get();
    EXPECT_EQ(violations.load(), 0);
    EXPECT_EQ(a, b);
    EXPECT_FALSE(access::busy(m));
  });
}

// Time-outs racing hand-overs: short timed locks of both kinds among plain
// ones, from ULTs and from a plain OS thread. A lost hand-over hangs the
// test; a wrong one shows as a reader beside a writer.
TEST(shared_mutex, timed_locks_racing_hand_overs_keep_exclusion) {
  const int rounds = static_cast<int>(scaled(1500));
  ito::start_main_thread_with_worker_size(4, [&] {
    ito::shared_mutex m;
    std::atomic<int> readers_in{0};
    std::atomic<int> writers_in{0};
    std::atomic<int> violations{0};
    std::atomic<int> timeouts{0};
    auto body = [&](unsigned seed) {
      std::minstd_rand rng(seed);
      for (int r = 0; r < rounds; ++r) {
        const bool write = rng() % 3 == 0;
        const bool timed = rng() % 2 == 0;
        const std::int64_t deadline =
            timed ? ito::sched::monotonic_ns() + static_cast<std::int64_t>(rng() % 50'000)
                  : access::never;
        const int rc = access::lock(m, write, deadline);
        if (rc == ETIMEDOUT) {
          ++timeouts;
          continue;
        }
        if (rc != 0) {
          ++violations;
          continue;
        }
        if (write) {
          if (writers_in.fetch_add(1) != 0 || readers_in.load() != 0) ++violations;
          if (rng() % 2) ito::yield();
          writers_in.fetch_sub(1);
        } else {
          readers_in.fetch_add(1);
          if (writers_in.load() != 0) ++violations;
          if (rng() % 2) ito::yield();
          readers_in.fetch_sub(1);
        }
        if (access::unlock(m) != 0) ++violations;
      }
    };
    std::vector<ito::future<void>> done;
    for (unsigned u = 0; u < 16; ++u) done.push_back(ito::create_thread(ito::own_ult, body, u + 1));
    std::thread outsider([&] {
      std::minstd_rand rng(99);
      for (int r = 0; r < rounds / 4; ++r) {
        const bool write = rng() % 2 == 0;
        const int rc = access::lock(m, write, ito::sched::monotonic_ns() + 20'000);
        if (rc == 0) {
          if (write ? readers_in.load() != 0 : writers_in.load() != 0) ++violations;
          if (access::unlock(m) != 0) ++violations;
        } else if (rc != ETIMEDOUT) {
          ++violations;
        }
      }
    });
    for (auto& f : done) f.get();
    outsider.join();
    EXPECT_EQ(violations.load(), 0);
    EXPECT_FALSE(access::busy(m));
  });
}

}  // namespace

// SPDX-License-Identifier: Apache-2.0
// The loader's locks (sched/loader_locks.hpp): found in glibc's ld.so, owned
// by a thread exactly while the loader runs its code with them held (here a
// dl_iterate_phdr callback), by that thread only; and a ULT there is one
// whose blocking calls must block its worker. The whole story, threads that
// dlopen libraries whose constructors compute and sleep under the preload:
// tests/posix/progs/dlopen_threads.c.
#include <gtest/gtest.h>
#include <link.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "ito/runtime.hpp"
#include "ito/thread.hpp"
#include "sched/loader_locks.hpp"
#include "sched/scheduler.hpp"
#include "test_support.hpp"

namespace {

using ito::sched::loader_lock_held_by;

// Runs fn once inside a dl_iterate_phdr callback (the loader's lock held).
template <class F>
void inside_the_loader(F fn) {
  struct walk {
    F* fn;
    bool ran = false;
  } w{&fn};
  dl_iterate_phdr(
      [](dl_phdr_info*, std::size_t, void* p) -> int {
        auto* w = static_cast<walk*>(p);
        (*w->fn)();
        w->ran = true;
        return 1;
      },
      &w);
  ASSERT_TRUE(w.ran);
}

TEST(loader_locks, are_found_in_glibc) {
  ito::sched::find_loader_locks();
  EXPECT_TRUE(ito::sched::loader_locks_found());
}

TEST(loader_locks, are_held_by_the_thread_in_a_callback_only_while_it_runs) {
  ito::sched::find_loader_locks();
  const pid_t self = gettid();
  EXPECT_FALSE(loader_lock_held_by(self));
  EXPECT_FALSE(loader_lock_held_by(0));  // an unheld lock's owner field
  bool held_inside = false;
  inside_the_loader([&] { held_inside = loader_lock_held_by(self); });
  EXPECT_TRUE(held_inside);
  EXPECT_FALSE(loader_lock_held_by(self));
}

TEST(loader_locks, another_threads_walk_is_not_ours) {
  ito::sched::find_loader_locks();
  const pid_t self = gettid();
  std::atomic<pid_t> walker{0};
  std::atomic<bool> seen{false}, leave{false};
  bool ours = true, theirs = false;
  std::thread t([&] {
    inside_the_loader([&] {
      walker.store(gettid());
      while (!seen.load()) std::this_thread::yield();
      while (!leave.load()) std::this_thread::yield();
    });
  });
  while (walker.load() == 0) std::this_thread::yield();
  ours = loader_lock_held_by(self);
  theirs = loader_lock_held_by(walker.load());
  seen.store(true);
  leave.store(true);
  t.join();
  EXPECT_FALSE(ours);
  EXPECT_TRUE(theirs);
}

// A ULT in the loader's code keeps its worker: its blocking calls are plain.
TEST(loader_locks, a_ult_inside_the_loader_must_block_its_worker) {
  ito::options o;
  o.workers = 2;
  ito::runtime rt(o);
  bool outside = false, inside = true, after = false;
  ito::create_thread([&] {
    outside = ito::sched::must_not_block_worker();
    inside_the_loader([&] { inside = ito::sched::must_not_block_worker(); });
    after = ito::sched::must_not_block_worker();
  }).get();
  EXPECT_TRUE(outside);
  EXPECT_FALSE(inside);
  EXPECT_TRUE(after);
}

}  // namespace

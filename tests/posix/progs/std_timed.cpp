// SPDX-License-Identifier: Apache-2.0
// libstdc++'s timed waits, which call glibc's clock variants
// (pthread_cond_clockwait, pthread_mutex_clocklock,
// pthread_rwlock_clockrdlock/clockwrlock): run as built against NPTL and
// under libito-preload.so.
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <shared_mutex>
#include <thread>

using namespace std::chrono_literals;

int main() {
  std::mutex m;
  std::condition_variable cv;
  bool ready = false;
  {
    std::unique_lock lock(m);
    std::printf("wait_for, nobody notifies: %s\n",
                cv.wait_for(lock, 20ms) == std::cv_status::timeout ? "timeout" : "?");
  }
  std::thread notifier([&] {
    std::this_thread::sleep_for(20ms);
    std::lock_guard lock(m);
    ready = true;
    cv.notify_one();
  });
  {
    std::unique_lock lock(m);
    std::printf("wait_for, notified: %s\n", cv.wait_for(lock, 10s, [&] { return ready; }) ? "ready" : "?");
  }
  notifier.join();

  std::timed_mutex tm;
  tm.lock();
  std::thread t1([&] {
    std::printf("timed_mutex try_lock_for held: %d\n", static_cast<int>(tm.try_lock_for(20ms)));
  });
  t1.join();
  tm.unlock();
  std::printf("timed_mutex try_lock_for free: %d\n", static_cast<int>(tm.try_lock_for(20ms)));
  tm.unlock();

  std::shared_timed_mutex sm;
  sm.lock();
  std::thread t2([&] {
    std::printf("try_lock_shared_for held: %d\n", static_cast<int>(sm.try_lock_shared_for(20ms)));
    std::printf("try_lock_for held: %d\n", static_cast<int>(sm.try_lock_for(20ms)));
  });
  t2.join();
  sm.unlock();
  std::printf("try_lock_shared_for free: %d\n", static_cast<int>(sm.try_lock_shared_for(20ms)));
  sm.unlock_shared();
  std::printf("try_lock_until free: %d\n",
              static_cast<int>(sm.try_lock_until(std::chrono::steady_clock::now() + 20ms)));
  sm.unlock();
  return 0;
}

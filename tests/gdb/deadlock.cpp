// SPDX-License-Identifier: Apache-2.0
// A program that deadlocks: ULTs 1024 and 2048 take two mutexes in opposite
// order, ULT 3072 waits on a condition variable nobody signals. The main ULT
// then stops the process with SIGTRAP, for gdb to look at (run_gdb_test.cmake).
#include <csignal>
#include <cstdio>
#include <mutex>

#include "ito/sync.hpp"
#include "ito/thread.hpp"

ito::mutex first, second, lonely;
ito::condition_variable never_signalled;

int main() {
  ito::start_main_thread_with_worker_size(2, [] {
    auto a = ito::create_thread(ito::own_ult, [] {
      std::lock_guard<ito::mutex> one(first);
      ito::sleep_for(std::chrono::nanoseconds(20'000'000));
      std::lock_guard<ito::mutex> two(second);
    });
    auto b = ito::create_thread(ito::own_ult, [] {
      std::lock_guard<ito::mutex> one(second);
      ito::sleep_for(std::chrono::nanoseconds(20'000'000));
      std::lock_guard<ito::mutex> two(first);
    });
    auto c = ito::create_thread(ito::own_ult, [] {
      std::unique_lock<ito::mutex> l(lonely);
      never_signalled.wait(l);
    });
    ito::sleep_for(std::chrono::nanoseconds(200'000'000));
    std::printf("deadlock: mutexes %p %p, condition variable %p\n", static_cast<void*>(&first),
                static_cast<void*>(&second), static_cast<void*>(&never_signalled));
    std::fflush(stdout);
    std::raise(SIGTRAP);  // gdb stops here
    std::_Exit(0);        // never joined: gdb kills the process first
  });
}

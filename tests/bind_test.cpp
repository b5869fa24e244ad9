// SPDX-License-Identifier: Apache-2.0
// ITO_BIND (options::bind): worker i runs on the i-th CPU the starting thread
// may use, and that thread gets all of them back when the runtime ends.
#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <vector>

#include "ito/runtime.hpp"
#include "ito/thread.hpp"

namespace {

cpu_set_t own_cpus() {
  cpu_set_t s;
  CPU_ZERO(&s);
  EXPECT_EQ(sched_getaffinity(0, sizeof s, &s), 0);
  return s;
}

std::vector<int> cpu_list(const cpu_set_t& s) {
  std::vector<int> cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &s)) cpus.push_back(cpu);
  return cpus;
}

TEST(bind, worker_i_runs_on_the_i_th_allowed_cpu_and_main_gets_its_cpus_back) {
  const cpu_set_t before = own_cpus();
  const std::vector<int> allowed = cpu_list(before);
  if (allowed.size() < 2) GTEST_SKIP() << "needs two CPUs to tell workers' pins apart";
  const unsigned n = 2;
  std::vector<std::vector<int>> seen(n);  // each worker's CPUs, as a ULT on it reads them
  {
    ito::options o;
    o.workers = n;
    o.bind = true;
    ito::runtime rt(o);
    std::mutex m;
    std::atomic<unsigned> workers_seen{0};
    // ULTs that yield until each worker has run one of them (the idle one
    // steals); generous bound for a loaded machine.
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    std::vector<ito::future<void>> fs;
    for (int i = 0; i < 8; ++i)
      fs.push_back(ito::create_thread([&] {
        while (workers_seen.load() < n && std::chrono::steady_clock::now() < give_up) {
          const int w = ito::current_worker_index();
          const std::vector<int> cpus = cpu_list(own_cpus());
          {
            std::lock_guard lock(m);
            if (seen[w].empty()) {
              seen[w] = cpus;
              workers_seen.fetch_add(1);
            }
          }
          ito::yield();
        }
      }));
    for (auto& f : fs) ito::join(f);
  }
  for (unsigned w = 0; w < n; ++w)
    EXPECT_EQ(seen[w], std::vector<int>{allowed[w]}) << "worker " << w;
  EXPECT_EQ(cpu_list(own_cpus()), allowed) << "the main thread stays pinned after the runtime";
}

}  // namespace

// SPDX-License-Identifier: Apache-2.0
// ITO_TRACE: a traced runtime writes, at its end, a Chrome trace with a track
// per thread (workers and pool threads, by name), a slice per ULT run, parks,
// pool jobs and flow nodes; slices on one track never overlap; a path that
// cannot be written stops the program at start.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "ito/delegate.hpp"
#include "ito/flow.hpp"
#include "ito/io.hpp"
#include "ito/thread.hpp"
#include "test_support.hpp"

namespace {

std::string trace_path() { return "/tmp/ito-trace-test-" + std::to_string(getpid()) + ".json"; }

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::size_t count_of(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// One traced runtime on two workers: 300 ULTs that yield, a flow graph of 16
// nodes, delegated calls, and a pause that parks the workers.
std::string run_traced_program() {
  const std::string path = trace_path();
  setenv("ITO_TRACE", path.c_str(), 1);
  ito::start_main_thread_with_worker_size(2, [] {
    std::vector<ito::future<int>> children;
    for (int i = 0; i < 300; ++i)
      children.push_back(ito::create_thread([i] {
        ito::yield();
        return i;
      }));
    long sum = 0;
    for (auto& c : children) sum += ito::join(c);
    EXPECT_EQ(sum, 299 * 300 / 2);
    ito::flow::graph g;
    std::atomic<int> ran{0};
    for (int i = 0; i < 16; ++i) g.add("node", [&] { ran.fetch_add(1); });
    g.run_and_wait();
    EXPECT_EQ(ran.load(), 16);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(ito::delegate([] { return usleep(1000); }), 0);
    ito::sleep_for(std::chrono::nanoseconds(30'000'000));  // worker 1 finds nothing and parks
  });
  unsetenv("ITO_TRACE");
  std::string text = read_file(path);
  std::remove(path.c_str());
  return text;
}

TEST(trace, a_traced_runtime_writes_threads_ult_runs_parks_pool_jobs_and_flow_nodes) {
  const std::string text = run_traced_program();
  ASSERT_EQ(text.rfind("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[", 0), 0u) << text.substr(0, 200);
  ASSERT_GE(text.size(), 4u);
  EXPECT_EQ(text.substr(text.size() - 4), "\n]}\n");
  EXPECT_EQ(count_of(text, "\"name\":\"ito-worker-1\""), 1u);
  EXPECT_GE(count_of(text, "\"name\":\"ito-pool-"), 1u);
  // Every ULT runs at least once, most twice (before and after its yield).
  EXPECT_GE(count_of(text, "\"cat\":\"ult\""), 300u);
  EXPECT_GE(count_of(text, "\"name\":\"flow node\""), 16u);
  EXPECT_GE(count_of(text, "\"name\":\"pool job\""), 3u);
  EXPECT_GE(count_of(text, "\"name\":\"park\""), 1u);
}

// The number after `"key":` in one event's line (no std::regex: gcc 12 warns
// falsely inside it under ASan's -O2).
std::string field(const std::string& line, const std::string& key) {
  const std::string tag = "\"" + key + "\":";
  const auto at = line.find(tag);
  if (at == std::string::npos) return {};
  const auto from = at + tag.size();
  const auto to = line.find_first_of(",}", from);
  return line.substr(from, to - from);
}

TEST(trace, slices_on_one_thread_follow_each_other_without_overlap) {
  const std::string text = run_traced_program();
  std::map<std::string, std::vector<std::pair<double, double>>> by_thread;
  std::istringstream lines(text);
  std::size_t slices = 0;
  for (std::string line; std::getline(lines, line);) {
    const bool scheduling = line.find("\"cat\":\"ult\"") != std::string::npos ||
                            line.find("\"cat\":\"sched\"") != std::string::npos;
    if (line.find("\"ph\":\"X\"") == std::string::npos || !scheduling) continue;
    const double ts = std::stod(field(line, "ts")), dur = std::stod(field(line, "dur"));
    ASSERT_GE(dur, 0.0) << line;
    by_thread[field(line, "tid")].push_back({ts, ts + dur});
    ++slices;
  }
  ASSERT_GE(slices, 300u);
  for (auto& [tid, spans] : by_thread) {
    std::sort(spans.begin(), spans.end());
    for (std::size_t i = 1; i < spans.size(); ++i)
      EXPECT_LE(spans[i - 1].second, spans[i].first + 0.002)  // printed to the ns
          << "thread " << tid << ": slice " << i - 1 << " overlaps the next";
  }
}

// Stamps are the host's CLOCK_MONOTONIC in microseconds, so the traces of
// several processes (the ranks of a distributed job) line up on one timeline
// (scripts/merge-traces.py): every slice lies between the clock read before
// the runtime started and after it ended.
TEST(trace, stamps_are_the_monotonic_clock_every_process_of_the_host_shares) {
  auto monotonic_us = [] {
    timespec t{};
    clock_gettime(CLOCK_MONOTONIC, &t);
    return static_cast<double>(t.tv_sec) * 1e6 + static_cast<double>(t.tv_nsec) / 1e3;
  };
  const double before = monotonic_us();
  const std::string text = run_traced_program();
  const double after = monotonic_us();
  std::istringstream lines(text);
  std::size_t slices = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.find("\"ph\":\"X\"") == std::string::npos) continue;
    const double ts = std::stod(field(line, "ts")), dur = std::stod(field(line, "dur"));
    EXPECT_GE(ts, before - 1) << line;  // printed to the ns; the clocks' conversion rounds
    EXPECT_LE(ts + dur, after + 1) << line;
    ++slices;
  }
  EXPECT_GE(slices, 300u);
}

// A child forked from a traced runtime that exits (atexit handlers run)
// after the parent wrote its trace must not overwrite it with its own copy.
TEST(trace, a_forked_child_leaves_the_parent_s_trace_alone) {
  // LeakSanitizer's check at the child's exit takes ASan's allocator lock,
  // which another thread may have held at the fork: the child then hangs.
  if (ito::test::asan) GTEST_SKIP() << "LeakSanitizer at exit in a forked child can deadlock";
  const std::string path = trace_path();
  setenv("ITO_TRACE", path.c_str(), 1);
  int go[2];
  ASSERT_EQ(pipe(go), 0);
  pid_t child = -1;
  ito::start_main_thread_with_worker_size(2, [&] {
    auto f = ito::create_thread([] { return 1; });
    ito::join(f);
    child = fork();
    if (child == 0) {
      char byte;
      while (read(go[0], &byte, 1) < 0) {
      }
      std::exit(0);  // runs the atexit handlers, the trace's among them
    }
  });
  unsetenv("ITO_TRACE");
  ASSERT_GT(child, 0);
  ASSERT_EQ(write(go[1], "x", 1), 1);  // the parent's trace is written by now
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  const std::string text = read_file(path);
  std::remove(path.c_str());
  EXPECT_NE(text.find("\"pid\":" + std::to_string(getpid()) + ","), std::string::npos);
  EXPECT_EQ(text.find("\"pid\":" + std::to_string(child) + ","), std::string::npos)
      << "the child wrote the trace";
}

TEST(trace, a_path_that_cannot_be_written_stops_the_program_at_start) {
  EXPECT_EXIT(
      {
        setenv("ITO_TRACE", "/nonexistent-ito-dir/trace.json", 1);
        ito::start_main_thread_with_worker_size(1, [] {});
        std::exit(0);
      },
      ::testing::ExitedWithCode(2),
      "ito: ITO_TRACE=/nonexistent-ito-dir/trace.json cannot be written: No such file or directory");
}

}  // namespace

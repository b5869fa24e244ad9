// SPDX-License-Identifier: Apache-2.0
// Exclusive nodes: never two activations at once, every queued continuation
// processed in order, ports; and the paper's split-phase I/O chain on a
// simulated device and on real I/O delegated to an os_pool thread.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "arch/cpu_relax.hpp"
#include "ito/flow.hpp"
#include "ito/os_pool.hpp"
#include "ito/thread.hpp"
#include "test_support.hpp"

namespace {

namespace flow = ito::flow;

std::uint64_t token(std::uint64_t producer, std::uint64_t seq) { return producer << 32 | seq; }

// 8 workers, 64 producer nodes each continuing one exclusive node many times,
// plus two ULTs doing the same: the body checks with an atomic that it never
// overlaps itself, counts every activation, and checks each producer's values
// arrive in the order it sent them.
TEST(flow_exclusive, never_overlaps_and_processes_every_queued_continuation_in_order) {
  constexpr unsigned producers = 64;
  constexpr unsigned ult_producers = 2;
  const auto per_producer = static_cast<std::uint64_t>(ito::test::scaled(400));
  ito::start_main_thread_with_worker_size(8, [&] {
    std::atomic<int> inside{0};
    std::atomic<int> overlaps{0};
    std::atomic<std::uint64_t> processed{0};
    std::vector<std::uint64_t> next_seq(producers + ult_producers, 0);  // touched by the body only
    std::atomic<int> out_of_order{0};
    flow::graph g;
    auto& excl = g.add(
        "serial",
        [&](flow::context& c) {
          if (inside.fetch_add(1, std::memory_order_acq_rel) != 0) overlaps.fetch_add(1);
          const std::uint64_t v = c.value();
          const std::uint64_t p = v >> 32, seq = v & 0xFFFFFFFF;
          if (next_seq[p] != seq) out_of_order.fetch_add(1);
          next_seq[p] = seq + 1;
          for (int i = 0; i < 50; ++i) ito::test::tsan ? void() : ito::arch::cpu_relax();
          processed.fetch_add(1, std::memory_order_relaxed);
          inside.fetch_sub(1, std::memory_order_acq_rel);
        },
        {.exclusive = true, .queue_capacity = 1u << 16});
    for (unsigned p = 0; p < producers; ++p)
      g.add([&, p](flow::context& c) {
        for (std::uint64_t s = 0; s < per_producer; ++s) c.continue_to(excl, token(p, s));
      });
    g.run();  // before the ULTs: run() wants an idle graph
    std::vector<ito::future<void>> ults;
    for (unsigned p = producers; p < producers + ult_producers; ++p)
      ults.push_back(ito::create_thread([&, p] {
        for (std::uint64_t s = 0; s < per_producer; ++s) {
          flow::continue_to(excl, token(p, s));
          if (s % 64 == 0) ito::yield();
        }
      }));
    for (auto& u : ults) ito::join(u);
    g.wait();
    EXPECT_EQ(overlaps.load(), 0);
    EXPECT_EQ(out_of_order.load(), 0);
    EXPECT_EQ(processed.load(), (producers + ult_producers) * per_producer);
    EXPECT_EQ(excl.counter(), 1);  // its one port is empty again
  });
}

// One worker: continuations queued while the node runs are processed after
// it, one activation each, in arrival order (self-continuation).
TEST(flow_exclusive, continuations_arriving_while_it_runs_queue_in_order) {
  ito::start_main_thread_with_worker_size(1, [] {
    flow::graph g;
    std::vector<std::uint64_t> seen;
    flow::node* self = nullptr;
    auto& excl = g.add(
        "excl",
        [&](flow::context& c) {
          seen.push_back(c.value());
          if (c.value() == 0)  // queue three more from inside its own activation
            for (std::uint64_t v = 1; v <= 3; ++v) c.continue_to(*self, v);
        },
        {.exclusive = true});
    self = &excl;
    flow::continue_to(excl, 0);
    flow::continue_to(excl, 10);  // arrives while the first is runnable: queued
    g.wait();
    EXPECT_EQ(seen, (std::vector<std::uint64_t>{0, 10, 1, 2, 3}));
  });
}

// Two ports: an activation takes one value from each; surplus values on one
// port wait for partners on the other (the static dataflow rule).
TEST(flow_exclusive, each_activation_takes_one_value_per_port) {
  ito::start_main_thread_with_worker_size(2, [] {
    flow::graph g;
    std::vector<std::pair<std::uint64_t, std::uint64_t>> pairs;
    auto& join = g.add(
        "join", [&](flow::context& c) { pairs.emplace_back(c.value(0), c.value(1)); },
        {.counter = 2, .exclusive = true});
    for (std::uint64_t v = 0; v < 5; ++v) flow::continue_to(join, v, 0);
    g.wait();
    EXPECT_TRUE(pairs.empty());
    EXPECT_EQ(join.counter(), 1);  // port 1 still empty
    for (std::uint64_t v = 0; v < 3; ++v) flow::continue_to(join, 100 + v, 1);
    g.wait();
    ASSERT_EQ(pairs.size(), 3u);
    for (std::uint64_t v = 0; v < 3; ++v) EXPECT_EQ(pairs[v], std::make_pair(v, 100 + v));
    EXPECT_THROW(flow::continue_to(join, 1, 2), flow::flow_error);  // no port 2
  });
}

TEST(flow_exclusive, a_full_queue_is_reported) {
  ito::start_main_thread_with_worker_size(1, [] {
    flow::graph g;
    auto& excl = g.add("tiny", [] {}, {.exclusive = true, .queue_capacity = 4});
    int accepted = 0;
    try {
      for (int i = 0; i < 100; ++i, ++accepted) flow::continue_to(excl, 1);
      FAIL();
    } catch (const flow::flow_error& e) {
      EXPECT_EQ(e.code(), ENOSPC);
    }
    EXPECT_EQ(accepted, 4);
    g.wait();
  });
}

// --- The paper's split-phase I/O (seed 004, figure 4) ----------------------
//
// request_k --value--> issue (exclusive; port 0: requests, port 1: permission)
//   issue hands the request to the device (a thread standing in for hardware:
//   delegation from the I/O issue has not landed) and holds the graph open;
// device --(after a delay, from its own thread)--> interrupt (exclusive)
//   interrupt saves the result, continues result_k, gives issue permission
//   for the next request (port 1), and self-continues;
// result_k checks its result.
// The permission makes the device see one request at a time.

struct io_request {
  unsigned k;
  std::uint64_t input;
  std::uint64_t output = 0;
};

class simulated_device {
 public:
  simulated_device(flow::graph& g, flow::node& interrupt) : g_(g), interrupt_(interrupt) {
    thread_ = std::thread([this] { serve(); });
  }
  ~simulated_device() {
    {
      std::lock_guard lock(m_);
      stop_ = true;
    }
    cv_.notify_one();
    thread_.join();
  }
  void submit(io_request* r) {
    if (busy_.fetch_add(1) != 0) overlapped_.fetch_add(1);
    {
      std::lock_guard lock(m_);
      queue_.push_back(r);
    }
    cv_.notify_one();
  }
  int overlapped() const { return overlapped_.load(); }
  std::vector<unsigned> order;  // device thread only, read after the run

 private:
  void serve() {
    std::unique_lock lock(m_);
    for (;;) {
      cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;
      io_request* r = queue_.front();
      queue_.pop_front();
      lock.unlock();
      std::this_thread::sleep_for(std::chrono::microseconds(20));
      r->output = r->input * 3 + 1;
      order.push_back(r->k);
      busy_.fetch_sub(1);
      flow::continue_to(interrupt_, r);  // the interrupt, from outside the runtime
      g_.release();                      // the request has left the device
      lock.lock();
    }
  }
  flow::graph& g_;
  flow::node& interrupt_;
  std::mutex m_;
  std::condition_variable cv_;
  std::deque<io_request*> queue_;
  bool stop_ = false;
  std::atomic<int> busy_{0};
  std::atomic<int> overlapped_{0};
  std::thread thread_;
};

// The paper's figure 4: request nodes -> an exclusive issue node -> the
// device -> an exclusive interrupt node -> each request's result node. The
// issue node holds the graph while a request is on the device; the device
// ends each request with complete(r), from any thread. Device results must be
// input * 3 + 1.
struct split_phase_chain {
  flow::graph g;
  std::vector<io_request> requests;
  std::vector<std::atomic<int>> received;
  std::vector<flow::node*> results;
  std::atomic<int> issue_inside{0}, interrupt_inside{0}, overlaps{0};
  std::function<void(io_request*)> submit;  // the device
  flow::node* issue = nullptr;
  flow::node* interrupt = nullptr;

  explicit split_phase_chain(unsigned n) : requests(n), received(n) {
    issue = &g.add(
        "issue",
        [this](flow::context& c) {
          if (issue_inside.fetch_add(1) != 0) overlaps.fetch_add(1);
          c.owner().hold();  // in flight on the device until complete()
          submit(c.pointer<io_request>(0));
          issue_inside.fetch_sub(1);
        },
        {.counter = 2, .exclusive = true});
    interrupt = &g.add(
        "interrupt",
        [this](flow::context& c) {
          if (interrupt_inside.fetch_add(1) != 0) overlaps.fetch_add(1);
          auto* r = c.pointer<io_request>();
          c.continue_to(*results[r->k], r);  // the result, straight to its receiver
          c.continue_to(*issue, 0, 1);       // permission for the next issue
          interrupt_inside.fetch_sub(1);
        },
        {.counter = 1, .exclusive = true});
    for (unsigned k = 0; k < n; ++k) {
      requests[k] = {k, k * 7ull};
      results.push_back(&g.add("result" + std::to_string(k), [this, k](flow::context& c) {
        auto* r = c.pointer<io_request>();
        if (r == &requests[k] && r->output == r->input * 3 + 1) received[k].fetch_add(1);
      }, {.counter = 1}));
      g.add("request" + std::to_string(k),
            [this, k](flow::context& c) { c.continue_to(*issue, &requests[k], 0); });
    }
  }

  void complete(io_request* r) {
    flow::continue_to(*interrupt, r);  // the interrupt, from outside the runtime
    g.release();                       // the request has left the device
  }

  void run_and_check() {
    g.run();
    flow::continue_to(*issue, 0, 1);  // the first issue needs no interrupt (the paper's initial value)
    g.wait();
    for (unsigned k = 0; k < requests.size(); ++k)
      EXPECT_EQ(received[k].load(), 1) << "request " << k;
    EXPECT_EQ(overlaps.load(), 0);
  }
};

TEST(flow_exclusive, split_phase_io_chain_on_a_simulated_device) {
  const unsigned n = ito::test::tsan ? 20 : 200;
  ito::start_main_thread_with_worker_size(4, [n] {
    split_phase_chain chain(n);
    simulated_device dev(chain.g, *chain.interrupt);
    chain.submit = [&](io_request* r) { dev.submit(r); };
    chain.run_and_check();
    EXPECT_EQ(dev.overlapped(), 0) << "the device saw two requests at once";
    EXPECT_EQ(dev.order.size(), n);
  });
}

// The same chain on real I/O delegated to an ito::os_pool thread: each
// request is a pread of its record from a file (record k holds the expected
// result), and the pool thread that did it raises the interrupt.
TEST(flow_exclusive, split_phase_io_chain_on_real_delegated_io) {
  const unsigned n = ito::test::tsan ? 20 : 200;
  char path[] = "/tmp/ito_flow_chain_XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  unlink(path);
  for (unsigned k = 0; k < n; ++k) {
    const std::uint64_t record = k * 7ull * 3 + 1;
    ASSERT_EQ(pwrite(fd, &record, sizeof record, k * sizeof record), ssize_t{sizeof record});
  }
  ito::os_pool pool;
  ito::start_main_thread_with_worker_size(4, [&] {
    split_phase_chain chain(n);
    std::atomic<int> on_device{0}, device_overlaps{0}, short_reads{0};
    chain.submit = [&](io_request* r) {
      if (on_device.fetch_add(1) != 0) device_overlaps.fetch_add(1);
      (void)pool.submit([&, r] {
        if (pread(fd, &r->output, sizeof r->output, r->k * sizeof r->output) != sizeof r->output)
          short_reads.fetch_add(1);
        on_device.fetch_sub(1);
        chain.complete(r);
      });
    };
    chain.run_and_check();
    EXPECT_EQ(device_overlaps.load(), 0) << "two requests were on the device at once";
    EXPECT_EQ(short_reads.load(), 0);
  });
  close(fd);
}

}  // namespace

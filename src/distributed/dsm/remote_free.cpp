// SPDX-License-Identifier: Apache-2.0
#include "distributed/dsm/remote_free.hpp"

#include <mpi.h>

#include <cerrno>
#include <chrono>
#include <string>
#include <thread>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "distributed/dsm/dsm.hpp"
#include "distributed/dsm/dsm_alloc.hpp"
#include "distributed/mpi_receive.hpp"
#include "distributed/peer_watch.hpp"
#include "distributed/progress.hpp"
#include "ito/error.hpp"
#include "sched/scheduler.hpp"

namespace ito::dist::detail {
namespace {

constexpr int free_tag = 0x171;

struct batch {
  std::vector<std::uint64_t> blocks;
  MPI_Request request = MPI_REQUEST_NULL;
};

struct exchange {
  MPI_Comm comm = MPI_COMM_NULL;
  std::mutex posted_lock;                               // `posted`, from any thread
  std::vector<std::vector<std::uint64_t>> posted;       // per owner
  bool anything_posted = false;
  std::mutex progress_lock;                             // the rest: the progress thread's
  std::vector<std::unique_ptr<batch>> in_flight;
  std::vector<std::uint64_t> sent_to;                   // batches, per owner
  std::uint64_t received = 0;
  std::vector<std::uint64_t> inbox;
};
exchange* g = nullptr;

void send_posted() {
  std::vector<std::vector<std::uint64_t>> out(g->posted.size());
  {
    std::lock_guard hold(g->posted_lock);
    if (!g->anything_posted) return;
    out.swap(g->posted);
    g->posted.resize(out.size());
    g->anything_posted = false;
  }
  sd_fence();  // what the freeing ranks wrote into these blocks is at its homes
  for (std::size_t owner = 0; owner < out.size(); ++owner) {
    if (out[owner].empty()) continue;
    auto b = std::make_unique<batch>();
    b->blocks.swap(out[owner]);
    MPI_Isend(b->blocks.data(), static_cast<int>(b->blocks.size()), MPI_UINT64_T,
              static_cast<int>(owner), free_tag, g->comm, &b->request);
    ++g->sent_to[owner];
    g->in_flight.push_back(std::move(b));
  }
}

void receive_returned() {
  int from = 0;
  while (receive_if_arrived(g->comm, free_tag, MPI_UINT64_T, g->inbox, from)) {
    ++g->received;
    for (std::uint64_t a : g->inbox) free_returned_block(reinterpret_cast<void*>(a), from);
  }
}

// The progress thread's hook.
void exchange_frees() {
  std::lock_guard hold(g->progress_lock);
  send_posted();
  std::erase_if(g->in_flight, [](std::unique_ptr<batch>& b) {
    int done = 0;
    MPI_Test(&b->request, &done, MPI_STATUS_IGNORE);
    return done != 0;
  });
  receive_returned();
}

// Waits on this thread (the main thread, or a process's main ULT) while the
// progress thread does the work.
template <class Done>
void wait_until(Done done) {
  for (;;) {
    {
      std::lock_guard hold(g->progress_lock);
      if (done()) return;
    }
    nudge_progress();
    if (sched::current_ult()) sched::sleep_until_ns(sched::monotonic_ns() + 50'000);
    else std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

}  // namespace

void start_remote_frees(int size) {
  g = new exchange;
  g->posted.resize(static_cast<std::size_t>(size));
  g->sent_to.assign(static_cast<std::size_t>(size), 0);
  MPI_Comm_dup(MPI_COMM_WORLD, &g->comm);
  name_mpi_failures(g->comm);
  set_progress_hook(progress_hook::remote_frees, &exchange_frees);
}

void post_remote_free(int owner, void* p) {
  if (!progress_running())
    throw usage_error(EINVAL, "ito: dsm: free: the block belongs to rank " +
                                  std::to_string(owner) +
                                  "'s heap, and freeing it from another rank takes the progress "
                                  "thread (ITO_DIST_PROGRESS_US must not be 0)");
  {
    std::lock_guard hold(g->posted_lock);
    g->posted[static_cast<std::size_t>(owner)].push_back(reinterpret_cast<std::uint64_t>(p));
    g->anything_posted = true;
  }
  nudge_progress();
}

void settle_remote_frees() {
  if (progress_running())
    wait_until([] {
      std::lock_guard posted(g->posted_lock);
      return !g->anything_posted && g->in_flight.empty();
    });
  std::uint64_t expected = 0;
  std::vector<std::uint64_t> sent;
  {
    std::lock_guard hold(g->progress_lock);
    sent = g->sent_to;
  }
  MPI_Reduce_scatter_block(sent.data(), &expected, 1, MPI_UINT64_T, MPI_SUM, g->comm);
  if (progress_running()) wait_until([&] { return g->received >= expected; });
}

void stop_remote_frees() noexcept {
  set_progress_hook(progress_hook::remote_frees, nullptr);
  MPI_Comm_free(&g->comm);
  delete g;
  g = nullptr;
}

}  // namespace ito::dist::detail
